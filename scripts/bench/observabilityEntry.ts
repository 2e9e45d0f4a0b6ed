/**
 * Only the logging and metrics code of a function, set up the way lib/runtime.ts and
 * lib/http/apiHandler.ts set it up at cold start: its import time is the init cost that
 * observability adds to every function.
 */
import { requestTelemetry } from "../../lib/http/middleware/requestTelemetry";
import { createTelemetry } from "../../lib/observability/telemetry";
import { routes } from "../../lib/routes";

const telemetry = createTelemetry({ service: "petstore", stage: "staging", level: "INFO", format: "json" });

export const middleware = requestTelemetry(routes.listPets, telemetry);
