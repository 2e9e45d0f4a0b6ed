// Run by `node` outside the project (no node_modules within reach, as in Lambda): imports a
// bundle and invokes its handler once with the event given as JSON, printing the status code.
const [target, eventJson] = process.argv.slice(2);
const { handler } = await import(target);
const context = { awsRequestId: "bench-smoke", functionName: "bench", getRemainingTimeInMillis: () => 10_000 };
const result = await handler(JSON.parse(eventJson), context);
process.stdout.write(`${JSON.stringify({ statusCode: result.statusCode, body: result.body })}\n`);
process.exit(0);
