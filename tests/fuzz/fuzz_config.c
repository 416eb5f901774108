/*
 * fuzz_config.c - libFuzzer harness for the conntrackd.conf parser.
 *
 * Any input must end in either a config or an error with a position, never
 * in a crash or a leak; an accepted config must also print and parse back.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
ignore_warning(void *arg, const struct config_error *w)
{
	(void)arg;
	(void)w;
}

static void
check_same_print(const struct config *cfg, const char *expected)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (out == NULL)
		return;
	config_print(cfg, out);
	fclose(out);
	/* The first line names the source; the rest must match byte for byte. */
	if (strcmp(strchr(text, '\n'), strchr(expected, '\n')) != 0) {
		fprintf(stderr, "printing is not stable:\n%s\n---\n%s", expected, text);
		abort();
	}
	free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config_error err;
	struct config cfg, again;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	if (config_parse_buffer(&cfg, "fuzz.conf", (const char *)data, size, &err,
				ignore_warning, NULL) < 0) {
		/* A failure always says where and why. */
		if (err.message[0] == '\0')
			abort();
		return 0;
	}
	out = open_memstream(&text, &len);
	if (out != NULL) {
		config_print(&cfg, out);
		fclose(out);
		/* What we print must be accepted by our own parser. */
		if (config_parse_buffer(&again, "printed", text, len, &err, ignore_warning, NULL) < 0) {
			fprintf(stderr, "printed config does not parse: %u:%u: %s\n%s",
				err.line, err.column, err.message, text);
			abort();
		}
		/* ... and print the same again: printing is a fixed point. */
		check_same_print(&again, text);
		config_free(&again);
		free(text);
	}
	config_free(&cfg);
	return 0;
}
