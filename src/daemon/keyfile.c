/*
 * keyfile.c - reading the sync key files.
 *
 * Whoever can read the key can write ESTABLISHED states into both
 * firewalls' kernels, and whoever can replace it can lock the pair out
 * of each other: so the file must be root's and private, as ssh wants of
 * a private key, and a file that is not is refused, never used with a
 * warning.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keyfile.h"

/* A key is 44 characters and a line end; anything much longer is not a key file. */
#define KEYFILE_MAX 256

int keyfile_read(const char *path, uint8_t key[ENVELOPE_KEY_BYTES], char *why, size_t why_len)
{
	char text[KEYFILE_MAX + 1];
	struct stat st;
	ssize_t n;
	size_t len = 0;
	int fd, err = 0;

	memset(key, 0, ENVELOPE_KEY_BYTES);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		err = -errno;
		if (err == -ELOOP)
			snprintf(why, why_len, "Key %s is a symbolic link; name the file itself", path);
		else
			snprintf(why, why_len, "Key %s: cannot open it: %s", path, strerror(-err));
		return err;
	}
	if (fstat(fd, &st) < 0) {
		err = -errno;
		snprintf(why, why_len, "Key %s: cannot stat it: %s", path, strerror(-err));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		snprintf(why, why_len, "Key %s is not a regular file", path);
		goto out;
	}
	if (st.st_uid != 0) {
		err = -EPERM;
		snprintf(why, why_len, "Key %s belongs to uid %u, not root; chown root %s",
			 path, (unsigned)st.st_uid, path);
		goto out;
	}
	if (st.st_mode & (S_IRWXO | S_IWGRP)) {
		err = -EPERM;
		snprintf(why, why_len, "Key %s has mode %04o: %s; chmod 600 %s", path,
			 (unsigned)(st.st_mode & 07777),
			 st.st_mode & S_IROTH ? "other users can read it" :
			 st.st_mode & S_IWGRP ? "its group can write it" : "other users can use it",
			 path);
		goto out;
	}
	while (len < sizeof(text) && (n = read(fd, text + len, sizeof(text) - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			snprintf(why, why_len, "Key %s: cannot read it: %s", path, strerror(-err));
			goto out;
		}
		len += (size_t)n;
	}
	if (len > KEYFILE_MAX) {
		err = -EINVAL;
		snprintf(why, why_len, "Key %s is longer than a key (%d bytes at most); "
			 "it must hold one line made by ctsyncd --genkey", path, KEYFILE_MAX);
		goto out;
	}
	if (envelope_key_parse(text, len, key) < 0) {
		err = -EINVAL;
		snprintf(why, why_len, "Key %s does not hold a key: it must hold one line of 44 base64 "
			 "characters, as ctsyncd --genkey prints", path);
	}
out:
	sodium_memzero(text, sizeof(text));
	close(fd);
	return err;
}

int keyfile_read_all(const struct config_sync *s, uint8_t keys[][ENVELOPE_KEY_BYTES], char *why,
		     size_t why_len)
{
	unsigned i;
	int err;

	for (i = 0; i < s->nkeys && i < ENVELOPE_KEYS_MAX; i++) {
		err = keyfile_read(s->keys[i], keys[i], why, why_len);
		if (err < 0)
			goto fail;
	}
	if (s->nkeys == 2 && envelope_key_id(keys[0]) == envelope_key_id(keys[1])) {
		err = sodium_memcmp(keys[0], keys[1], ENVELOPE_KEY_BYTES) == 0 ? -EEXIST : -EINVAL;
		snprintf(why, why_len, err == -EEXIST ?
			 "Key %s and Key %s hold the same key; give it once" :
			 "Key %s and Key %s have the same key id; generate another key with ctsyncd --genkey",
			 s->keys[0], s->keys[1]);
		goto fail;
	}
	return (int)i;
fail:
	sodium_memzero(keys, (size_t)ENVELOPE_KEYS_MAX * ENVELOPE_KEY_BYTES);
	return err;
}
