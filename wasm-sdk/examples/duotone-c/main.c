/*
 * duotone-c: a vitrine transformation in C that maps the image's tones onto
 * a gradient from a dark to a light colour, the same arithmetic as the Go
 * example duotone's, so both give the same bytes.
 *
 *     t[]=duotone-c:dark=222244,light=ffeecc,mix=0.8
 */
#include <stdbool.h>
#include <vitrine.h>

VITRINE_ABI_V1

/* color reads the colour parameter name ("rrggbbaa", as the host normalises
 * it) into rgb; false when it cannot. */
static bool color(const char *name, uint8_t rgb[3]) {
	char v[16];
	if (vitrine_param_str(name, v, sizeof v) != 8) {
		return false;
	}
	for (int i = 0; i < 3; i++) {
		char pair[3] = {v[2 * i], v[2 * i + 1], '\0'};
		char *end;
		rgb[i] = (uint8_t)strtoul(pair, &end, 16);
		if (*end != '\0') {
			return false;
		}
	}
	return true;
}

/* lerp is the value at t/255 of the way from a to b, rounded. */
static uint8_t lerp(uint32_t a, uint32_t b, uint32_t t) {
	return (uint8_t)((a * (255 - t) + b * t + 127) / 255);
}

static void duotone(uint8_t *pix, size_t n, const uint8_t dark[3], const uint8_t light[3], double mix) {
	uint8_t lut[3][256];
	for (uint32_t y = 0; y < 256; y++) {
		for (int c = 0; c < 3; c++) {
			lut[c][y] = lerp(dark[c], light[c], y);
		}
	}
	mix = mix < 0 ? 0 : mix > 1 ? 1 : mix;
	uint32_t m = (uint32_t)(mix * 256 + 0.5), keep = 256 - m;
	for (size_t i = 0; i < n; i++, pix += 4) {
		uint32_t l = (77 * (uint32_t)pix[0] + 150 * (uint32_t)pix[1] + 29 * (uint32_t)pix[2] + 128) >> 8;
		for (int c = 0; c < 3; c++) {
			pix[c] = (uint8_t)(((uint32_t)pix[c] * keep + (uint32_t)lut[c][l] * m + 128) >> 8);
		}
	}
}

VITRINE_EXPORT("vitrine_transform")
int32_t transform(void) {
	uint8_t dark[3], light[3];
	char mixs[32];
	if (!color("dark", dark) || !color("light", light) || vitrine_param_str("mix", mixs, sizeof mixs) < 0) {
		vitrine_log_str(VITRINE_LOG_ERROR, "duotone-c: cannot read the parameters");
		return 1;
	}
	double mix = strtod(mixs, NULL);
	int32_t w = vitrine_image_width(), h = vitrine_image_height();
	if (w < 1 || h < 1) {
		return 1;
	}
	size_t len = 4 * (size_t)w * (size_t)h;
	uint8_t *pix = malloc(len);
	if (pix == NULL) {
		vitrine_log_str(VITRINE_LOG_ERROR, "duotone-c: out of memory");
		return 1;
	}
	int32_t got = vitrine_pixels_read(pix, len);
	if (got < 0 || (size_t)got != len) {
		free(pix);
		return 1;
	}
	duotone(pix, (size_t)w * (size_t)h, dark, light, mix);
	int32_t rc = vitrine_pixels_write(w, h, pix, len);
	free(pix);
	return rc < 0 ? 1 : 0;
}
