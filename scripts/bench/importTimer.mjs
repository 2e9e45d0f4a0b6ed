// Run by `node` with no loader and no flags, in a fresh process per measurement: the time to
// import (load, parse, link, evaluate) the module named on the command line.
const target = process.argv[2];
const started = performance.now();
const cpuStarted = process.cpuUsage();
await import(target);
const ms = performance.now() - started;
// CPU time (all threads) is less disturbed than wall time when other work shares the cores.
const cpu = process.cpuUsage(cpuStarted);
process.stdout.write(`${JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000 })}\n`);
// Whatever the module left open (sockets, timers) must not hold the next measurement back.
process.exit(0);
