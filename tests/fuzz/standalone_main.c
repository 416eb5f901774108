/*
 * standalone_main.c - run a libFuzzer harness without libFuzzer.
 *
 * Feeds every file named on the command line (directories are walked one
 * level deep) to LLVMFuzzerTestOneInput.  With no argument it runs the seed
 * corpus "$top_srcdir/tests/fuzz/corpus/<FUZZ_CORPUS_NAME>", which is how
 * `make check` uses it.  Each input is also fed truncated at every length
 * and with a few deterministic byte mutations, so that a gcc build without
 * libFuzzer still walks the error paths of every seed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FUZZ_CORPUS_NAME
#error "define FUZZ_CORPUS_NAME, the corpus directory under tests/fuzz/corpus"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MUTATIONS_PER_INPUT 64

/* A small fixed PRNG: runs must be reproducible. */
static uint32_t
next_random(uint32_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 17;
	*state ^= *state << 5;
	return *state;
}

static int
run_buffer(const uint8_t *data, size_t size)
{
	static const uint8_t interesting[] = { '\0', '{', '}', '#', '\n', ' ', '/', '-', '9', 0xff };
	uint32_t seed = 0x9e3779b9u ^ (uint32_t)size;
	uint8_t *copy;
	size_t i;
	int m;

	LLVMFuzzerTestOneInput(data, size);
	copy = malloc(size ? size : 1);
	if (copy == NULL)
		return -1;
	/* Every prefix: the parser must stop cleanly in every state. */
	for (i = 0; i < size; i++) {
		memcpy(copy, data, i);
		LLVMFuzzerTestOneInput(copy, i);
	}
	for (m = 0; size && m < MUTATIONS_PER_INPUT; m++) {
		memcpy(copy, data, size);
		i = next_random(&seed) % size;
		copy[i] = next_random(&seed) & 1 ? interesting[next_random(&seed) % sizeof(interesting)]
						 : (uint8_t)next_random(&seed);
		LLVMFuzzerTestOneInput(copy, size);
	}
	free(copy);
	return 0;
}

static int
run_file(const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;
	FILE *f;
	int ret;

	f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	do {
		if (len == cap) {
			uint8_t *nb;

			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap);
			if (nb == NULL) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	ret = run_buffer(buf, len);
	free(buf);
	return ret;
}

static int
run_path(const char *path, unsigned *count)
{
	struct dirent *de;
	struct stat st;
	char sub[4096];
	DIR *d;
	int ret = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return run_file(path);
	}
	d = opendir(path);
	if (d == NULL) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (stat(sub, &st) == 0 && S_ISREG(st.st_mode)) {
			(*count)++;
			if (run_file(sub) < 0)
				ret = -1;
		}
	}
	closedir(d);
	return ret;
}

int
main(int argc, char **argv)
{
	const char *srcdir = getenv("top_srcdir");
	char corpus[4096];
	unsigned count = 0;
	int i, ret = 0;

	if (argc < 2) {
		snprintf(corpus, sizeof(corpus), "%s/tests/fuzz/corpus/%s",
			 srcdir ? srcdir : ".", FUZZ_CORPUS_NAME);
		ret = run_path(corpus, &count);
	}
	for (i = 1; i < argc; i++)
		if (run_path(argv[i], &count) < 0)
			ret = -1;
	if (count == 0) {
		fprintf(stderr, "no input found (set top_srcdir or name files)\n");
		return 1;
	}
	printf("%u inputs run\n", count);
	return ret < 0 ? 1 : 0;
}
