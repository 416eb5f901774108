/*
 * lexer.c - split conntrackd.conf text into braces and words.
 *
 * The input is a byte buffer of known length that may hold anything,
 * NUL bytes included; nothing here assumes NUL termination.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "lexer.h"

/* Longest stretch of a token quoted in a message; the rest becomes "...". */
#define QUOTE_BYTES 40

void
lexer_init(struct lexer *lx, const char *buf, size_t len)
{
	lx->buf = buf;
	lx->len = len;
	lx->pos = 0;
	lx->line = 1;
	lx->column = 1;
}

static bool
is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Bytes that can be part of a word: anything visible, UTF-8 included. */
static bool
is_word_byte(unsigned char c)
{
	return c > ' ' && c != 0x7f && c != '{' && c != '}' && c != '#';
}

static void
advance(struct lexer *lx)
{
	if (lx->buf[lx->pos] == '\n') {
		if (lx->line < UINT_MAX)
			lx->line++;
		lx->column = 1;
	} else if (lx->column < UINT_MAX) {
		lx->column++;
	}
	lx->pos++;
}

void
lexer_next(struct lexer *lx, struct token *tok)
{
	unsigned char c;

	for (;;) {
		if (lx->pos >= lx->len)
			break;
		c = (unsigned char)lx->buf[lx->pos];
		if (is_space(c)) {
			advance(lx);
		} else if (c == '#') {
			/* A comment swallows every byte up to the newline, NULs included. */
			while (lx->pos < lx->len && lx->buf[lx->pos] != '\n')
				advance(lx);
		} else {
			break;
		}
	}

	tok->text = lx->buf + lx->pos;
	tok->len = 0;
	tok->line = lx->line;
	tok->column = lx->column;

	if (lx->pos >= lx->len) {
		tok->type = TOK_EOF;
		return;
	}

	c = (unsigned char)lx->buf[lx->pos];
	if (c == '{' || c == '}') {
		tok->type = c == '{' ? TOK_LBRACE : TOK_RBRACE;
		tok->len = 1;
		advance(lx);
		return;
	}
	if (!is_word_byte(c)) {
		tok->type = TOK_INVALID;
		tok->len = 1;
		advance(lx);
		return;
	}
	tok->type = TOK_WORD;
	while (lx->pos < lx->len && is_word_byte((unsigned char)lx->buf[lx->pos]))
		advance(lx);
	tok->len = (size_t)(lx->buf + lx->pos - tok->text);
}

bool
token_is(const struct token *tok, const char *s)
{
	size_t n = strlen(s);

	return tok->type == TOK_WORD && tok->len == n && memcmp(tok->text, s, n) == 0;
}

static unsigned char
lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

bool
token_is_nocase(const struct token *tok, const char *s)
{
	size_t i, n = strlen(s);

	if (tok->type != TOK_WORD || tok->len != n)
		return false;
	for (i = 0; i < n; i++)
		if (lower((unsigned char)tok->text[i]) != lower((unsigned char)s[i]))
			return false;
	return true;
}

const char *
token_quote(const struct token *tok, char *out, size_t outlen)
{
	size_t i, o = 0, n;

	if (outlen == 0)
		return out;
	if (tok->type == TOK_EOF) {
		snprintf(out, outlen, "end of file");
		return out;
	}
	n = tok->len < QUOTE_BYTES ? tok->len : QUOTE_BYTES;
	if (o + 1 < outlen)
		out[o++] = '\'';
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)tok->text[i];

		if (c >= ' ' && c < 0x7f && c != '\\') {
			if (o + 1 < outlen)
				out[o++] = (char)c;
		} else if (o + 4 < outlen) {
			snprintf(out + o, outlen - o, "\\x%02x", c);
			o += 4;
		}
	}
	if (tok->len > n && o + 3 < outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	if (o + 1 < outlen)
		out[o++] = '\'';
	out[o] = '\0';
	return out;
}
