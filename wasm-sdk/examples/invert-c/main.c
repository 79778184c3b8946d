/*
 * invert-c: a vitrine transformation in C that inverts the colours of the
 * image, keeping its alpha. With the parameter alpha=true it inverts the
 * alpha channel too.
 *
 *     t[]=invert-c
 */
#include <stdbool.h>
#include <vitrine.h>

VITRINE_ABI_V1

/* invert inverts n RGBA pixels in place. */
static void invert(uint8_t *pix, size_t n, bool alpha) {
	for (size_t i = 0; i < n; i++, pix += 4) {
		pix[0] = 255 - pix[0];
		pix[1] = 255 - pix[1];
		pix[2] = 255 - pix[2];
		if (alpha) {
			pix[3] = 255 - pix[3];
		}
	}
}

VITRINE_EXPORT("vitrine_transform")
int32_t transform(void) {
	char value[8];
	int32_t n = vitrine_param_str("alpha", value, sizeof value);
	if (n < 0 && n != VITRINE_ERR_NOT_FOUND) {
		vitrine_log_str(VITRINE_LOG_ERROR, "invert-c: cannot read the parameter alpha");
		return 1;
	}
	bool alpha = n >= 0 && strcmp(value, "true") == 0;

	int32_t w = vitrine_image_width(), h = vitrine_image_height();
	if (w < 1 || h < 1) {
		return 1;
	}
	size_t len = 4 * (size_t)w * (size_t)h;
	uint8_t *pix = malloc(len);
	if (pix == NULL) {
		vitrine_log_str(VITRINE_LOG_ERROR, "invert-c: out of memory");
		return 1;
	}
	int32_t got = vitrine_pixels_read(pix, len);
	if (got < 0 || (size_t)got != len) {
		free(pix);
		return 1;
	}
	invert(pix, (size_t)w * (size_t)h, alpha);
	int32_t rc = vitrine_pixels_write(w, h, pix, len);
	free(pix);
	return rc < 0 ? 1 : 0;
}
