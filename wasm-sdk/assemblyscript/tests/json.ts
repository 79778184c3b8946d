// The SDK's JSON reader and writer, tested natively under Node.js (no
// vitrine host needed): run() returns the number of failed checks, and
// each failure is reported through the imported function fail.
import { JSONValue, parseJSON } from "../assembly/json";

@external("test", "fail")
declare function reportFailure(input: string, got: string, want: string): void;

let failures = 0;

function check(input: string, got: string, want: string): void {
  if (got != want) {
    reportFailure(input, got, want);
    failures++;
  }
}

function roundTrip(input: string, want: string): void {
  const v = parseJSON(input);
  check(input, v == null ? "<error>" : v.toString(), want);
}

export function run(): i32 {
  roundTrip('{"a":1,"b":[true,false,null],"c":"x\\"y\\\\z\\n","d":-1.5e3,"e":{}}', '{"a":1,"b":[true,false,null],"c":"x\\"y\\\\z\\n","d":-1500,"e":{}}');
  roundTrip(' [ 0.25 , "\\u00e9\\ud83d\\ude00" ] ', '[0.25,"é😀"]');
  roundTrip('{"k":1,"k":2}', '{"k":2}');
  roundTrip("12345678901", "12345678901");
  roundTrip('"\\u0001\\t"', '"\\u0001\\t"');
  const bad = ["", "{", "[1,]", '{"a"}', "01", "1.", "nul", '"\u0001"', "1 2", "{a:1}", "-", '"\\x"', "[" .repeat(600) + "]".repeat(600)];
  for (let i = 0; i < bad.length; i++) {
    const v = parseJSON(bad[i]);
    check(bad[i].substring(0, 20), v == null ? "<error>" : v.toString(), "<error>");
  }
  const o = JSONValue.object().set("a", JSONValue.number(1)).set("b", JSONValue.string("x")).set("a", JSONValue.bool(true));
  check("built object", o.toString(), '{"a":true,"b":"x"}');
  const b = o.get("b");
  check("get", b == null ? "<null>" : b.s, "x");
  check("isInteger 7", parseJSON("7")!.isInteger() ? "yes" : "no", "yes");
  check("isInteger 7.5", parseJSON("7.5")!.isInteger() ? "yes" : "no", "no");
  return failures;
}
