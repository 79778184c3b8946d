// Generates ./schema.ts from api/openapi.yaml (VITRINE_OPENAPI) with
// openapi-typescript's Node API, given the folder of the openapi-typescript
// package: its defaults, and `format: binary` typed as Blob, as its
// documentation's "Blob support" example does (the command line has no
// option for it).
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const require = createRequire(path.join(process.argv[2], "package.json"));
const { default: openapiTS, astToString } = require("openapi-typescript");
const ts = require("typescript");

const BLOB = ts.factory.createTypeReferenceNode(ts.factory.createIdentifier("Blob"));
const ast = await openapiTS(pathToFileURL(process.env.VITRINE_OPENAPI), {
  transform(schema) {
    if (schema.format === "binary") return BLOB;
  },
});
writeFileSync("schema.ts", astToString(ast));
