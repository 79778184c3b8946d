// minsize: a vitrine listener in AssemblyScript. On images.post it refuses
// uploads smaller than its settings' minimum width and height with a 400,
// counts what it checked and refused, and tags the images it lets through:
//
//   {"minsize": {"checked": true, "width": 1920, "height": 1080, "minWidth": 200, "minHeight": 200}}
//
// On stats.get it shows its minimum in GET /stats, beside its counters.
import {
  Event, JSONValue, Level, fail, lastErrorMessage, log, reject, runListener, setMetadata, settings, statsAdd, statsSet,
} from "../../assembly/index";
export { vitrine_abi_v1 } from "../../assembly/index";

export function vitrine_on_event(): i32 {
  return runListener(onEvent);
}

function onEvent(ev: Event): void {
  const s = settings();
  const minW = setting(s, "minWidth");
  const minH = setting(s, "minHeight");
  if (minW < 0 || minH < 0) return; // failed
  if (ev.name == "stats.get") {
    if (statsSet("minimum", JSONValue.object().set("width", JSONValue.number(<f64>minW)).set("height", JSONValue.number(<f64>minH))) < 0) {
      fail(lastErrorMessage);
    }
    return;
  }
  const img = ev.image;
  if (img == null) {
    fail("minsize: event " + ev.name + " has no image; subscribe it to images.post");
    return;
  }
  statsAdd("checked", 1);
  if (img.width < minW || img.height < minH) {
    statsAdd("rejected", 1);
    log(Level.Info, "minsize: refused a " + img.width.toString() + "x" + img.height.toString() + " upload");
    reject(400, "The image is " + img.width.toString() + "x" + img.height.toString() + " pixels; images must be at least " +
      minW.toString() + "x" + minH.toString());
    return;
  }
  const tag = JSONValue.object()
    .set("checked", JSONValue.bool(true))
    .set("width", JSONValue.number(<f64>img.width))
    .set("height", JSONValue.number(<f64>img.height))
    .set("minWidth", JSONValue.number(<f64>minW))
    .set("minHeight", JSONValue.number(<f64>minH));
  if (setMetadata(JSONValue.object().set("minsize", tag)) < 0) fail(lastErrorMessage);
}

/** The whole number key of the settings (0 when absent); -1, having failed
 * the call, when it is something else. */
function setting(s: JSONValue | null, key: string): i64 {
  if (s == null) return 0;
  const v = s.get(key);
  if (v == null) return 0;
  if (!v.isInteger() || v.n < 0) {
    fail("minsize: settings: " + key + " is " + v.toString() + ", want a whole number");
    return -1;
  }
  return <i64>v.n;
}
