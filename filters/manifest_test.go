package filters

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestParseManifest is the table of manifest rules of ABI.md section 2.
func TestParseManifest(t *testing.T) {
	t.Parallel()
	const head = `"name":"duotone","version":"1.0.0","abi":1,`
	cases := []struct {
		name, json, wantErr string
	}{
		{"minimal transformation", `{` + head + `"kind":"transformation"}`, ""},
		{"full example", `{` + head + `"kind":"transformation","description":"d",
			"params":{"dark":{"type":"color","default":"000000","description":"shadows"},
			"light":{"type":"color","default":"ffffff"},"mix":{"type":"number","min":0,"max":1,"default":1}},
			"limits":{"memoryMB":128,"timeoutMs":2000,"instances":4},"capabilities":[],"settings":{"a":[1,2]}}`, ""},
		{"listener", `{` + head + `"kind":"listener","events":["images.post","image.*","*.get","*"],"priority":50,"fatal":false}`, ""},
		{"unknown field", `{` + head + `"kind":"transformation","colour":1}`, `unknown field "colour"`},
		{"typo in a limit", `{` + head + `"kind":"transformation","limits":{"timeoutMS":5}}`, `unknown field "limits.timeoutMS"`},
		{"typo in a param", `{` + head + `"kind":"transformation","params":{"a":{"type":"int","Min":1}}}`, `unknown field "params.a.Min"`},
		{"trailing data", `{` + head + `"kind":"transformation"} {}`, "data after the manifest"},
		{"bad name", `{"name":"Duo","version":"1","abi":1,"kind":"transformation"}`, "name:"},
		{"long name", `{"name":"` + strings.Repeat("a", 65) + `","version":"1","abi":1,"kind":"transformation"}`, "name:"},
		{"no version", `{"name":"d","abi":1,"kind":"transformation"}`, "version: required"},
		{"abi 2", `{"name":"d","version":"1","abi":2,"kind":"transformation"}`, "abi: this host speaks ABI 1"},
		{"bad kind", `{` + head + `"kind":"filter"}`, `kind: want "transformation" or "listener"`},
		{"listener without events", `{` + head + `"kind":"listener"}`, "events: a listener needs"},
		{"bad event", `{` + head + `"kind":"listener","events":["images"]}`, `events: "images" is not an event`},
		{"unknown event", `{` + head + `"kind":"listener","events":["images.post","bogus.event"]}`, `events: "bogus.event" is not an event`},
		{"method a resource lacks", `{` + head + `"kind":"listener","events":["stats.post"]}`, `events: "stats.post" is not an event`},
		{"options fire no event", `{` + head + `"kind":"listener","events":["*.options"]}`, `events: "*.options" is not an event`},
		{"unknown resource pattern", `{` + head + `"kind":"listener","events":["thumbnails.*"]}`, `events: "thumbnails.*" is not an event`},
		{"star dot star", `{` + head + `"kind":"listener","events":["*.*"]}`, `events: "*.*" is not an event`},
		{"upper case", `{` + head + `"kind":"listener","events":["Images.post"]}`, `events: "Images.post" is not an event`},
		{"every kind of event", `{` + head + `"kind":"listener","events":["image.head","metadata.*","*.delete","filters.post","keys.put"]}`, ""},
		{"listener params", `{` + head + `"kind":"listener","events":["*"],"params":{"a":{"type":"int"}}}`, "listeners take no parameters"},
		{"transformation with events", `{` + head + `"kind":"transformation","events":["*"]}`, "are for listeners"},
		{"too much memory", `{` + head + `"kind":"transformation","limits":{"memoryMB":5000}}`, "limits.memoryMB: want 1-4096, got 5000"},
		{"memory 0", `{` + head + `"kind":"transformation","limits":{"memoryMB":0}}`, "limits.memoryMB: want 1-4096, got 0"},
		{"negative memory", `{` + head + `"kind":"transformation","limits":{"memoryMB":-128}}`, "limits.memoryMB: want 1-4096, got -128"},
		{"timeout 0", `{` + head + `"kind":"transformation","limits":{"timeoutMs":0}}`, "limits.timeoutMs: want 1-60000, got 0"},
		{"negative timeout", `{` + head + `"kind":"transformation","limits":{"timeoutMs":-1}}`, "limits.timeoutMs: want 1-60000, got -1"},
		{"too long a timeout", `{` + head + `"kind":"transformation","limits":{"timeoutMs":60001}}`, "limits.timeoutMs: want 1-60000, got 60001"},
		{"instances 0", `{` + head + `"kind":"transformation","limits":{"instances":0}}`, "limits.instances: want 1-64, got 0"},
		{"negative instances", `{` + head + `"kind":"transformation","limits":{"instances":-4}}`, "limits.instances: want 1-64, got -4"},
		{"too many instances", `{` + head + `"kind":"transformation","limits":{"instances":65}}`, "limits.instances: want 1-64, got 65"},
		{"0 beside good limits", `{` + head + `"kind":"transformation","limits":{"memoryMB":64,"timeoutMs":500,"instances":0}}`, "limits.instances: want 1-64, got 0"},
		{"limits at their bounds", `{` + head + `"kind":"transformation","limits":{"memoryMB":1,"timeoutMs":60000,"instances":64}}`, ""},
		{"no queue", `{` + head + `"kind":"transformation","limits":{"queue":0,"queueMs":1}}`, ""},
		{"negative queue", `{` + head + `"kind":"transformation","limits":{"queue":-1}}`, "limits.queue: want 0-1024, got -1"},
		{"too long a queue", `{` + head + `"kind":"transformation","limits":{"queue":1025}}`, "limits.queue: want 0-1024, got 1025"},
		{"queue wait 0", `{` + head + `"kind":"transformation","limits":{"queueMs":0}}`, "limits.queueMs: want 1-60000, got 0"},
		{"string limit", `{` + head + `"kind":"transformation","limits":{"instances":"4"}}`, "cannot unmarshal string"},
		{"unknown capability", `{` + head + `"kind":"transformation","capabilities":["net"]}`, `unknown capability "net"`},
		{"twice a capability", `{` + head + `"kind":"transformation","capabilities":["clock","clock"]}`, "listed twice"},
		{"bad param name", `{` + head + `"kind":"transformation","params":{"1a":{"type":"int"}}}`, `name "1a"`},
		{"bad param type", `{` + head + `"kind":"transformation","params":{"a":{"type":"float"}}}`, "params.a: type"},
		{"min above max", `{` + head + `"kind":"transformation","params":{"a":{"type":"int","min":5,"max":1}}}`, "min 5 is larger than max 1"},
		{"fractional int bound", `{` + head + `"kind":"transformation","params":{"a":{"type":"int","max":1.5}}}`, "must be integers"},
		{"bounds on a string", `{` + head + `"kind":"transformation","params":{"a":{"type":"string","min":1}}}`, "min and max are for int and number"},
		{"maxLength on int", `{` + head + `"kind":"transformation","params":{"a":{"type":"int","maxLength":3}}}`, "maxLength is for string"},
		{"enum without values", `{` + head + `"kind":"transformation","params":{"a":{"type":"enum"}}}`, "an enum needs at least one value"},
		{"enum duplicate", `{` + head + `"kind":"transformation","params":{"a":{"type":"enum","values":["x","x"]}}}`, "listed twice"},
		{"values on a string", `{` + head + `"kind":"transformation","params":{"a":{"type":"string","values":["x"]}}}`, "values is for enum"},
		{"required with default", `{` + head + `"kind":"transformation","params":{"a":{"type":"int","required":true,"default":1}}}`, "no use for a default"},
		{"default of the wrong type", `{` + head + `"kind":"transformation","params":{"a":{"type":"int","default":"1"}}}`, `default: "1" is not of type int`},
		{"default out of range", `{` + head + `"kind":"transformation","params":{"a":{"type":"int","max":3,"default":4}}}`, "default: must be between"},
		{"default not in enum", `{` + head + `"kind":"transformation","params":{"a":{"type":"enum","values":["x"],"default":"y"}}}`, `default: "y" is not one of x`},
		{"bad colour default", `{` + head + `"kind":"transformation","params":{"a":{"type":"color","default":"red"}}}`, "not a hex colour"},
		{"fractional int default", `{` + head + `"kind":"transformation","params":{"a":{"type":"int","default":1.5}}}`, "not an integer"},
		{"int default written as a decimal", `{` + head + `"kind":"transformation","params":{"a":{"type":"int","default":6.0}}}`, `"6.0" is not an integer`},
		{"param named as its key", `{` + head + `"kind":"transformation","params":{"a":{"name":"a","type":"int"}}}`, ""},
		{"param named otherwise", `{` + head + `"kind":"transformation","params":{"a":{"name":"b","type":"int"}}}`, `params.a: name: "b" is not the parameter's key`},
		{"allowNone is no manifest field", `{` + head + `"kind":"transformation","params":{"a":{"type":"color","AllowNone":true}}}`, `unknown field "AllowNone"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseManifest([]byte(c.json))
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("err = %v, want it to contain %q", err, c.wantErr)
			}
		})
	}
}

// TestManifestDefaults checks the defaults a manifest leaves out.
func TestManifestDefaults(t *testing.T) {
	t.Parallel()
	m, err := ParseManifest([]byte(`{"name":"l","version":"1","abi":1,"kind":"listener","events":["*"],"settings":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Limits.MemoryMB != 128 || m.Limits.TimeoutMs != 2000 || m.Limits.Instances < 1 || !m.IsFatal() || m.Settings != nil {
		t.Fatalf("defaults not applied: %+v", m)
	}
}

// limits is Limits with the queue's defaults (4 calls per instance, for
// the call's timeout).
func limits(memoryMB, timeoutMs, instances int) Limits {
	return Limits{memoryMB, timeoutMs, instances, 4 * instances, timeoutMs}
}

// TestLimitDefaults shows that each limit left out takes its default while
// the limits given keep their values.
func TestLimitDefaults(t *testing.T) {
	t.Parallel()
	cpus := min(runtime.NumCPU(), 64)
	cases := []struct {
		limits string
		want   Limits
	}{
		{``, limits(DefaultMemoryMB, DefaultTimeoutMs, cpus)},
		{`,"limits":{}`, limits(DefaultMemoryMB, DefaultTimeoutMs, cpus)},
		{`,"limits":{"memoryMB":64}`, limits(64, DefaultTimeoutMs, cpus)},
		{`,"limits":{"timeoutMs":1}`, limits(DefaultMemoryMB, 1, cpus)},
		{`,"limits":{"instances":1}`, limits(DefaultMemoryMB, DefaultTimeoutMs, 1)},
		{`,"limits":{"memoryMB":4096,"timeoutMs":60000,"instances":64}`, limits(4096, 60000, 64)},
		{`,"limits":{"instances":2,"timeoutMs":500,"queue":0,"queueMs":100}`, Limits{DefaultMemoryMB, 500, 2, 0, 100}},
	}
	for _, c := range cases {
		t.Run(c.limits, func(t *testing.T) {
			t.Parallel()
			m, err := ParseManifest([]byte(`{"name":"t","version":"1","abi":1,"kind":"transformation"` + c.limits + `}`))
			if err != nil {
				t.Fatal(err)
			}
			if m.Limits != c.want {
				t.Fatalf("limits = %+v, want %+v", m.Limits, c.want)
			}
		})
	}
}

// TestEventNames checks the list of events: sorted, each one
// `<resource>.<method>` with a method the service fires events for, and
// each one a valid subscription of its own.
func TestEventNames(t *testing.T) {
	t.Parallel()
	names := EventNames()
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Fatalf("EventNames is not sorted and unique: %v", names)
	}
	methods := []string{"get", "head", "post", "put", "patch", "delete"}
	for _, n := range names {
		resource, method, ok := strings.Cut(n, ".")
		if !ok || resource == "" || !slices.Contains(methods, method) {
			t.Errorf("%q is not <resource>.<method> with a method of %v", n, methods)
		}
		if !knownEvent(n) || !knownEvent(resource+".*") || !knownEvent("*."+method) {
			t.Errorf("%q, %s.* or *.%s refused", n, resource, method)
		}
	}
	names[0] = "changed"
	if EventNames()[0] == "changed" {
		t.Fatal("EventNames returned the package's own slice")
	}
}

// TestNormalise is the table of parameter normalisation (ABI.md section 2):
// what a t[] value becomes for the guest, or the 400 it gets.
func TestNormalise(t *testing.T) {
	t.Parallel()
	m, err := ParseManifest([]byte(`{"name":"p","version":"1","abi":1,"kind":"transformation","params":{
		"i":{"type":"int","min":-10,"max":1000},
		"n":{"type":"number","min":0,"max":1,"default":0.5},
		"b":{"type":"bool","default":false},
		"s":{"type":"string","maxLength":5},
		"c":{"type":"color","default":"#ABC"},
		"e":{"type":"enum","values":["fit","fill"]},
		"r":{"type":"int","required":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{"n": "0.5", "b": "false", "c": "aabbccff", "r": "1"}
	cases := []struct {
		name    string
		in      map[string]string
		want    map[string]string // overrides of defaults
		wantErr string
	}{
		{"defaults", map[string]string{"r": "1"}, nil, ""},
		{"int leading zeros and sign", map[string]string{"r": "1", "i": "+007"}, map[string]string{"i": "7"}, ""},
		{"negative int", map[string]string{"r": "1", "i": "-10"}, map[string]string{"i": "-10"}, ""},
		{"int below min", map[string]string{"r": "1", "i": "-11"}, nil, "Invalid value for i: must be between -10 and 1000, got -11"},
		{"int not an int", map[string]string{"r": "1", "i": "1.0"}, nil, `Invalid value for i: "1.0" is not an integer`},
		{"int with spaces", map[string]string{"r": "1", "i": " 1"}, nil, "Invalid value for i"},
		{"int that ran on", map[string]string{"r": "1", "i": "1,size"}, nil,
			`Invalid value for i: "1,size" is not an integer; the value ran on past ",size", which has no "=": write size=<value>`},
		{"number normalised", map[string]string{"r": "1", "n": ".250"}, map[string]string{"n": "0.25"}, ""},
		{"number exponent", map[string]string{"r": "1", "n": "1e-1"}, map[string]string{"n": "0.1"}, ""},
		{"number hex refused", map[string]string{"r": "1", "n": "0x1p-2"}, nil, "is not a number"},
		{"number nan refused", map[string]string{"r": "1", "n": "NaN"}, nil, "is not a number"},
		{"number out of range", map[string]string{"r": "1", "n": "1.5"}, nil, "must be between 0 and 1, got 1.5"},
		{"bool 1", map[string]string{"r": "1", "b": "1"}, map[string]string{"b": "true"}, ""},
		{"bool yes refused", map[string]string{"r": "1", "b": "yes"}, nil, "is not a boolean"},
		{"string", map[string]string{"r": "1", "s": "hé"[:2]}, nil, "not valid UTF-8"},
		{"string ok", map[string]string{"r": "1", "s": "héll"}, map[string]string{"s": "héll"}, ""},
		{"string too long", map[string]string{"r": "1", "s": "abcdef"}, nil, "longer than 5 bytes"},
		{"colour rrggbb", map[string]string{"r": "1", "c": "FF0000"}, map[string]string{"c": "ff0000ff"}, ""},
		{"colour with alpha", map[string]string{"r": "1", "c": "#11223344"}, map[string]string{"c": "11223344"}, ""},
		{"colour bad", map[string]string{"r": "1", "c": "12345"}, nil, `"12345" is not a hex colour`},
		{"enum", map[string]string{"r": "1", "e": "fill"}, map[string]string{"e": "fill"}, ""},
		{"enum bad", map[string]string{"r": "1", "e": "crop"}, nil, `Invalid value for e: "crop" is not one of fit, fill`},
		{"missing required", map[string]string{}, nil, "Missing required parameter: r"},
		{"unknown", map[string]string{"r": "1", "zz": "1", "aa": "2"}, nil, "Unknown parameter(s): aa, zz"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := m.Normalise(c.in)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !isKind(err, KindInvalid) {
					t.Fatalf("err = %v, want KindInvalid containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for k, v := range defaults {
				want[k] = v
			}
			for k, v := range c.want {
				want[k] = v
			}
			if len(got) != len(want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("%s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}

// TestManifestBounds: every bounded field of a manifest is refused past
// its bound, with the field and the bound named, and taken at it.
func TestManifestBounds(t *testing.T) {
	t.Parallel()
	const head = `"name":"duotone","abi":1,`
	params := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"p%d":{"type":"int"}`, i)
		}
		return `{` + head + `"version":"1","kind":"transformation","params":{` + b.String() + `}}`
	}
	values := func(n, size int) string {
		vs := make([]string, n)
		for i := range vs {
			vs[i] = fmt.Sprintf("%q", fmt.Sprintf("%0*d", size, i))
		}
		return `{` + head + `"version":"1","kind":"transformation","params":{"v":{"type":"enum","values":[` + strings.Join(vs, ",") + `]}}}`
	}
	events := func(n int) string {
		return `{` + head + `"version":"1","kind":"listener","events":[` + strings.TrimSuffix(strings.Repeat(`"images.post",`, n), ",") + `]}`
	}
	str := func(field string, n int) string {
		return `{` + head + `"version":"1","kind":"transformation","` + field + `":"` + strings.Repeat("x", n) + `"}`
	}
	for _, tc := range []struct {
		name, at, over, wantErr string
	}{
		{"version", `{` + head + `"version":"` + strings.Repeat("1", MaxVersionBytes) + `","kind":"transformation"}`,
			`{` + head + `"version":"` + strings.Repeat("1", MaxVersionBytes+1) + `","kind":"transformation"}`,
			fmt.Sprintf("version: %d bytes, over the limit of %d", MaxVersionBytes+1, MaxVersionBytes)},
		{"description", str("description", MaxDescriptionBytes), str("description", MaxDescriptionBytes+1),
			fmt.Sprintf("description: %d bytes, over the limit of %d", MaxDescriptionBytes+1, MaxDescriptionBytes)},
		{"params", params(MaxParams), params(MaxParams + 1),
			fmt.Sprintf("params: %d parameters, over the limit of %d", MaxParams+1, MaxParams)},
		{"enum values", values(MaxParamValues, 3), values(MaxParamValues+1, 3),
			fmt.Sprintf("params.v.values: %d values, over the limit of %d", MaxParamValues+1, MaxParamValues)},
		{"enum value size", values(2, MaxValueBytes), values(2, MaxValueBytes+1),
			fmt.Sprintf("params.v.values: %d bytes in a value, over the limit of %d", MaxValueBytes+1, MaxValueBytes)},
		{"param description", `{` + head + `"version":"1","kind":"transformation","params":{"a":{"type":"int","description":"` + strings.Repeat("d", MaxDescriptionBytes) + `"}}}`,
			`{` + head + `"version":"1","kind":"transformation","params":{"a":{"type":"int","description":"` + strings.Repeat("d", MaxDescriptionBytes+1) + `"}}}`,
			"params.a.description: 2049 bytes, over the limit of 2048"},
		{"default", `{` + head + `"version":"1","kind":"transformation","params":{"a":{"type":"string","default":"` + strings.Repeat("d", MaxValueBytes) + `"}}}`,
			`{` + head + `"version":"1","kind":"transformation","params":{"a":{"type":"string","default":"` + strings.Repeat("d", MaxValueBytes+1) + `"}}}`,
			"params.a.default: 257 bytes, over the limit of 256"},
		{"events", events(MaxEvents), events(MaxEvents + 1),
			fmt.Sprintf("events: %d events, over the limit of %d", MaxEvents+1, MaxEvents)},
		{"settings", `{` + head + `"version":"1","kind":"transformation","settings":"` + strings.Repeat("s", MaxSettingsBytes-2) + `"}`,
			`{` + head + `"version":"1","kind":"transformation","settings":"` + strings.Repeat("s", MaxSettingsBytes-1) + `"}`,
			fmt.Sprintf("settings: %d bytes, over the limit of %d", MaxSettingsBytes+1, MaxSettingsBytes)},
		{"whole manifest", str("description", 10), `{` + head + `"version":"1","kind":"transformation","settings":{"a":"` + strings.Repeat("s", MaxManifestBytes) + `"}}`,
			fmt.Sprintf("over the %d a manifest may take", MaxManifestBytes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseManifest([]byte(tc.at)); err != nil {
				t.Errorf("at the bound: %v", err)
			}
			_, err := ParseManifest([]byte(tc.over))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("past the bound: %v, want %q", err, tc.wantErr)
			}
		})
	}
}
