// Runs the AssemblyScript SDK's tests built by make -C wasm-sdk as-test:
// node tests/run.mjs tests/json.wasm
import { readFileSync } from "node:fs";

const bytes = readFileSync(process.argv[2]);
let memory;
const text = (ptr) => {
  if (!ptr) return "null";
  const len = new Uint32Array(memory.buffer, ptr - 4, 1)[0];
  return String.fromCharCode(...new Uint16Array(memory.buffer, ptr, len >> 1));
};
const { instance } = await WebAssembly.instantiate(bytes, {
  env: {
    abort(msg, file, line, col) {
      throw new Error(`abort: ${text(msg)} at ${text(file)}:${line}:${col}`);
    },
  },
  test: {
    fail(input, got, want) {
      console.error(`${text(input)}: got ${text(got)}, want ${text(want)}`);
    },
  },
});
memory = instance.exports.memory;
const failures = instance.exports.run();
if (failures > 0) {
  console.error(`${process.argv[2]}: ${failures} failed`);
  process.exit(1);
}
console.log(`${process.argv[2]}: ok`);
