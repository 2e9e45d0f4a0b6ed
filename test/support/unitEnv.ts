// Handler modules read their configuration at import; unit tests inject their own dependencies.
process.env.PETS_TABLE_NAME ??= "unit-tests-never-used";
process.env.PETSTORE_STAGE ??= "local";
process.env.AWS_REGION ??= "us-east-1";
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
