/*
 * lexer.h - tokens of conntrackd.conf (private to src/config).
 *
 * The grammar has only three kinds of tokens: '{', '}' and words.  A word is
 * a run of bytes that are neither whitespace, braces nor '#'.  Whether a word
 * is a keyword, a number, an address or a path depends on where it stands,
 * so the parser interprets words in context; this gives error messages that
 * say what was expected at that place instead of a bare "syntax error".
 */
#ifndef CTSYNCD_CONFIG_LEXER_H
#define CTSYNCD_CONFIG_LEXER_H

#include <stdbool.h>
#include <stddef.h>

enum token_type {
	TOK_EOF,
	TOK_LBRACE,
	TOK_RBRACE,
	TOK_WORD,
	TOK_INVALID,    /* a control byte (NUL included) outside a comment */
};

/* A token points into the input buffer; nothing is copied or allocated. */
struct token {
	enum token_type type;
	const char *text;
	size_t len;
	unsigned line;          /* 1-based */
	unsigned column;        /* 1-based, in bytes (a tab counts as one) */
};

struct lexer {
	const char *buf;
	size_t len;
	size_t pos;
	unsigned line;
	unsigned column;
};

void lexer_init(struct lexer *lx, const char *buf, size_t len);

/* Return the next token; at the end of the input, TOK_EOF forever. */
void lexer_next(struct lexer *lx, struct token *tok);

/* True if the word equals the NUL-terminated `s` (case-sensitive). */
bool token_is(const struct token *tok, const char *s);

/* Same, ignoring ASCII case (booleans, mode names). */
bool token_is_nocase(const struct token *tok, const char *s);

/*
 * Quote a token for a message: printable ASCII as is, other bytes as \xHH,
 * at most about 40 bytes of input followed by "...".  Always NUL-terminates.
 * Returns `out`.
 */
const char *token_quote(const struct token *tok, char *out, size_t outlen);

#define TOKEN_QUOTE_MAX 176

#endif
