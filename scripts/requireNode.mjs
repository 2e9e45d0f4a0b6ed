/**
 * The first step of every npm script (package.json "scripts": `node scripts/requireNode.mjs && …`):
 * on a Node.js below package.json `engines`, a tree installed anyway (by a newer Node, or with
 * --engine-strict=false) fails later in ways that do not name the cause. This stops the script with one line naming the supported
 * range and the running version, and exit code 1; on a supported Node it prints nothing.
 *
 * Plain JavaScript with nothing to install, written for old Node versions too (no newer syntax or
 * APIs), since those are the ones it must speak to. It is not an install script (npm 11 runs the
 * project's preinstall only after installing the dependencies): `npm install` is stopped by
 * .npmrc's engine-strict instead, which .ci/run turns off to install with the machine's Node.
 */
import { readFileSync } from "node:fs";

const packageJson = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
const range = String(packageJson.engines?.node ?? "");

/** [major, minor, patch] of "X.Y.Z" (a leading v allowed), or undefined. */
function parts(version) {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

function atLeast(version, lowest) {
  for (let index = 0; index < 3; index++) {
    if (version[index] !== lowest[index]) return version[index] > lowest[index];
  }
  return true;
}

// Only the form package.json uses; another form must be taught here rather than pass unchecked.
const lowest = /^>=\s*(\S+)$/.test(range.trim()) ? parts(range.trim().replace(/^>=\s*/, "")) : undefined;
if (!lowest) {
  console.error(`scripts/requireNode.mjs understands engines.node of the form >=X.Y.Z, not "${range}".`);
  process.exit(1);
}
const running = process.versions.node;
const version = parts(running);
if (!version || !atLeast(version, lowest)) {
  console.error(
    `Pet Store needs Node.js ${range} (this is ${running}). Install it (e.g. nvm install) and run npm install again.`,
  );
  process.exit(1);
}
