export { ajv, AjvValidator, check, compileSchema, toIssues } from "./ajv";
