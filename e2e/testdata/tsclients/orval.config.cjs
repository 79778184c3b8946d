// orval's configuration for TestTypeScriptClients (e2e/tsclients_test.go):
// the fetch client into ./client/api.ts, with the two settings orval asks
// of a fetch client that uploads and downloads files. A custom fetch
// (orvalfetch.ts; orval's own pattern for a base URL and a body that is
// not JSON), and for uploadImage the form: orval's fetch client sends only
// a form or a JSON body, and sends an operation with several request
// content types as JSON.
module.exports = {
  vitrine: {
    input: { target: process.env.VITRINE_OPENAPI },
    output: {
      target: "./client/api.ts",
      client: "fetch",
      mode: "single",
      override: {
        mutator: { path: "./orvalfetch.ts", name: "customFetch" },
        operations: {
          uploadImage: { contentType: { include: ["multipart/form-data", "application/json"] } },
        },
      },
    },
  },
};
