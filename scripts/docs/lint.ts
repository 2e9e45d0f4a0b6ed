/** `npm run lint:openapi`: writes the document as built and lints it with Redocly's recommended rules. */
import { relative } from "node:path";
import { writeOpenApiDocument } from "./build";
import { projectRoot } from "./paths";
import { redocly } from "./redocly";

const document = await writeOpenApiDocument();
await redocly(["lint", relative(projectRoot, document), "--config", `${projectRoot}redocly.yaml`]);
