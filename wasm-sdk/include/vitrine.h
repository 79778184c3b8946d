/*
 * vitrine.h: the vitrine filter ABI v1 for C (and anything that can include
 * a C header), for modules built for wasm32-wasi(p1). ABI.md beside this
 * folder is the normative contract; this header only names it.
 *
 * A transformation:
 *
 *     #include <vitrine.h>
 *
 *     VITRINE_ABI_V1
 *
 *     VITRINE_EXPORT("vitrine_transform") int32_t transform(void) {
 *         ... read pixels, change them, write them ...
 *         return 0;
 *     }
 *
 * Build it as a reactor:
 *
 *     clang --target=wasm32-wasi -mexec-model=reactor -O2 -I include -o filter.wasm main.c
 */
#ifndef VITRINE_H
#define VITRINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes of the host functions (ABI.md section 5). Functions that copy
 * into a buffer return the value's full size on success; the others 0. */
#define VITRINE_ERR_NOT_FOUND (-1)   /* parameter absent, no settings, no metadata */
#define VITRINE_ERR_FAULT (-2)       /* a (ptr, len) range outside the memory */
#define VITRINE_ERR_INVALID (-3)     /* bad JSON, pixel buffer length, status, UTF-8 */
#define VITRINE_ERR_UNAVAILABLE (-4) /* not available in this call */
#define VITRINE_ERR_LIMIT (-5)       /* an image or metadata limit exceeded */

/* Log levels of vitrine_log. */
#define VITRINE_LOG_DEBUG 0
#define VITRINE_LOG_INFO 1
#define VITRINE_LOG_WARN 2
#define VITRINE_LOG_ERROR 3

/* VITRINE_EXPORT(name) exports the function that follows under name. */
#define VITRINE_EXPORT(name) __attribute__((export_name(name)))

/* VITRINE_ABI_V1 defines the version marker export; write it once, at file
 * scope, in one of the module's files. */
#define VITRINE_ABI_V1 \
	VITRINE_EXPORT("vitrine_abi_v1") void vitrine_abi_v1(void) {}

#define VITRINE_IMPORT(name) __attribute__((import_module("vitrine"), import_name(name)))

/* Parameters and settings. */
VITRINE_IMPORT("param_get")
int32_t vitrine_param_get(const char *name, size_t name_len, void *buf, size_t buf_len);
VITRINE_IMPORT("settings_get")
int32_t vitrine_settings_get(void *buf, size_t buf_len);

/* Pixels (transformations): RGBA8, straight alpha, sRGB, stride 4 * width. */
VITRINE_IMPORT("image_width")
int32_t vitrine_image_width(void);
VITRINE_IMPORT("image_height")
int32_t vitrine_image_height(void);
VITRINE_IMPORT("pixels_read")
int32_t vitrine_pixels_read(void *buf, size_t buf_len);
VITRINE_IMPORT("pixels_write")
int32_t vitrine_pixels_write(int32_t width, int32_t height, const void *buf, size_t buf_len);

/* Events (listeners). */
VITRINE_IMPORT("event_get")
int32_t vitrine_event_get(void *buf, size_t buf_len);
VITRINE_IMPORT("body_read")
int32_t vitrine_body_read(void *buf, size_t buf_len);
VITRINE_IMPORT("body_write")
int32_t vitrine_body_write(const void *buf, size_t len);

/* Metadata. */
VITRINE_IMPORT("metadata_get")
int32_t vitrine_metadata_get(void *buf, size_t buf_len);
VITRINE_IMPORT("metadata_set")
int32_t vitrine_metadata_set(const char *json, size_t len);

/* Statistics. */
VITRINE_IMPORT("stats_add")
int32_t vitrine_stats_add(const char *name, size_t name_len, int64_t delta);
VITRINE_IMPORT("stats_set")
int32_t vitrine_stats_set(const char *name, size_t name_len, const char *json, size_t json_len);

/* Logging and rejection. */
VITRINE_IMPORT("log")
int32_t vitrine_log(int32_t level, const char *msg, size_t len);
VITRINE_IMPORT("reject")
int32_t vitrine_reject(int32_t status, const char *msg, size_t len);

/* vitrine_log_str logs a NUL-terminated message. */
static inline int32_t vitrine_log_str(int32_t level, const char *msg) {
	return vitrine_log(level, msg, strlen(msg));
}

/* vitrine_reject_str rejects the request with a NUL-terminated message. */
static inline int32_t vitrine_reject_str(int32_t status, const char *msg) {
	return vitrine_reject(status, msg, strlen(msg));
}

/* vitrine_param_str copies parameter name into buf as a NUL-terminated
 * string. It returns the value's length, or a VITRINE_ERR_* code; when the
 * value does not fit in buf_len - 1 bytes it returns VITRINE_ERR_LIMIT. */
static inline int32_t vitrine_param_str(const char *name, char *buf, size_t buf_len) {
	if (buf_len == 0) {
		return VITRINE_ERR_LIMIT;
	}
	int32_t n = vitrine_param_get(name, strlen(name), buf, buf_len - 1);
	if (n < 0) {
		return n;
	}
	if ((size_t)n > buf_len - 1) {
		return VITRINE_ERR_LIMIT;
	}
	buf[n] = '\0';
	return n;
}

/* vitrine_read_alloc reads a value through one of the host functions that
 * copy into a buffer (settings_get, event_get, body_read, metadata_get,
 * pixels_read) into a malloc'ed buffer with a terminating NUL, retrying once
 * with the full size. It returns the buffer (free it) and sets *len, or
 * returns NULL and sets *err to the VITRINE_ERR_* code (VITRINE_ERR_LIMIT
 * when malloc fails). */
static inline char *vitrine_read_alloc(int32_t (*read)(void *, size_t), size_t *len, int32_t *err) {
	size_t cap = 1024;
	char *buf = (char *)malloc(cap + 1);
	if (buf == NULL) {
		*err = VITRINE_ERR_LIMIT;
		return NULL;
	}
	int32_t n = read(buf, cap);
	if (n >= 0 && (size_t)n > cap) {
		free(buf);
		cap = (size_t)n;
		buf = (char *)malloc(cap + 1);
		if (buf == NULL) {
			*err = VITRINE_ERR_LIMIT;
			return NULL;
		}
		n = read(buf, cap);
		if (n >= 0 && (size_t)n > cap) {
			n = VITRINE_ERR_INVALID; /* the value changed between two reads */
		}
	}
	if (n < 0) {
		free(buf);
		*err = n;
		return NULL;
	}
	buf[n] = '\0';
	*len = (size_t)n;
	*err = 0;
	return buf;
}

#ifdef __cplusplus
}
#endif

#endif /* VITRINE_H */
