/*
 * minsize-c: a vitrine listener in C, the Go example minsize's twin. On
 * images.post it refuses uploads smaller than its settings' minimum width
 * and height with a 400, counts what it checked and refused, and tags the
 * images it lets through:
 *
 *     {"minsize": {"checked": true, "width": 1920, "height": 1080, "minWidth": 200, "minHeight": 200}}
 *
 * On stats.get it shows its minimum in GET /stats, beside its counters.
 * C has no JSON reader, so this one finds the few numbers it needs in the
 * host's compact JSON by their keys.
 */
#include <stdbool.h>
#include <stdio.h>
#include <vitrine.h>

VITRINE_ABI_V1

/* json_int finds "key": in json and reads the whole number after it into
 * *out: 1 when it did, 0 when the key is absent, -1 when its value is not a
 * whole number. */
static int json_int(const char *json, const char *key, long *out) {
	char quoted[72];
	snprintf(quoted, sizeof quoted, "\"%s\":", key);
	const char *p = strstr(json, quoted);
	if (p == NULL) {
		return 0;
	}
	p += strlen(quoted);
	while (*p == ' ') {
		p++;
	}
	char *end;
	*out = strtol(p, &end, 10);
	return end != p && (*end == ',' || *end == '}' || *end == ' ') ? 1 : -1;
}

static int32_t fail(const char *msg) {
	vitrine_log_str(VITRINE_LOG_ERROR, msg);
	return 1;
}

static int32_t add(const char *name) {
	return vitrine_stats_add(name, strlen(name), 1);
}

VITRINE_EXPORT("vitrine_on_event")
int32_t on_event(void) {
	size_t len;
	int32_t err;
	long min_w = 0, min_h = 0, w, h;
	char *settings = vitrine_read_alloc(vitrine_settings_get, &len, &err);
	if (settings != NULL) {
		int a = json_int(settings, "minWidth", &min_w), b = json_int(settings, "minHeight", &min_h);
		free(settings);
		if (a < 0 || b < 0) {
			return fail("minsize-c: settings: minWidth and minHeight must be whole numbers");
		}
	} else if (err != VITRINE_ERR_NOT_FOUND) {
		return fail("minsize-c: cannot read the settings");
	}
	char *ev = vitrine_read_alloc(vitrine_event_get, &len, &err);
	if (ev == NULL) {
		return fail("minsize-c: cannot read the event");
	}
	bool stats = strstr(ev, "\"event\":\"stats.get\"") != NULL;
	const char *img = strstr(ev, "\"image\":{");
	bool sized = img != NULL && json_int(img, "width", &w) == 1 && json_int(img, "height", &h) == 1;
	free(ev);
	char buf[256];
	if (stats) {
		int n = snprintf(buf, sizeof buf, "{\"width\":%ld,\"height\":%ld}", min_w, min_h);
		return vitrine_stats_set("minimum", 7, buf, (size_t)n) < 0 ? fail("minsize-c: stats_set failed") : 0;
	}
	if (!sized) {
		return fail("minsize-c: the event has no image; subscribe it to images.post");
	}
	if (add("checked") < 0) {
		return fail("minsize-c: stats_add failed");
	}
	if (w < min_w || h < min_h) {
		add("rejected");
		snprintf(buf, sizeof buf, "minsize: refused a %ldx%ld upload", w, h);
		vitrine_log_str(VITRINE_LOG_INFO, buf);
		snprintf(buf, sizeof buf, "The image is %ldx%ld pixels; images must be at least %ldx%ld", w, h, min_w, min_h);
		vitrine_reject_str(400, buf);
		return 0;
	}
	int n = snprintf(buf, sizeof buf,
		"{\"minsize\":{\"checked\":true,\"width\":%ld,\"height\":%ld,\"minWidth\":%ld,\"minHeight\":%ld}}", w, h, min_w, min_h);
	return vitrine_metadata_set(buf, (size_t)n) < 0 ? fail("minsize-c: metadata_set failed") : 0;
}
