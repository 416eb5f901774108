/*
 * keyfile.h - reading the sync key files named by Key (ctsyncd.conf(5)).
 */
#ifndef CTSYNCD_KEYFILE_H
#define CTSYNCD_KEYFILE_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "envelope/envelope.h"

/*
 * Read the key in `path` into `key`.  The file must be a regular file
 * owned by root, neither readable nor writable by others, nor writable by
 * its group; it holds one base64 key (`ctsyncd --genkey`).  On error
 * returns -errno (-EPERM for an unsafe file, -EINVAL for its contents)
 * with `why` saying what is wrong and how to fix it, naming the path;
 * `key` is then zeroed.  No copy of the key is left behind.
 */
int keyfile_read(const char *path, uint8_t key[ENVELOPE_KEY_BYTES], char *why, size_t why_len);

/*
 * Read every Key of `s` into keys[] (keys[0] the sending key) and check
 * that their ids differ.  Returns the number of keys (0 without Key), or
 * -errno with `why` set; keys[] is zeroed on error.
 */
int keyfile_read_all(const struct config_sync *s, uint8_t keys[][ENVELOPE_KEY_BYTES], char *why,
		     size_t why_len);

#endif
