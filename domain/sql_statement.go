package domain

import (
	"errors"
	"fmt"
	"strings"
)

// What is sent to a target database is one statement: a rollout task's sql payload and a
// wave's SQL health probe. CheckOneStatement judges the text when it is given (the API's
// 400) and again before it is sent; at run time the text also goes over the extended
// query protocol, with which PostgreSQL itself refuses more than one statement ("cannot
// insert multiple commands into a prepared statement"), so the server's own parser has the
// last word whatever this lexer misjudges. docs/security.md says how each is tested.

// ErrMultipleStatements: the text holds more than one statement.
var ErrMultipleStatements = errors.New("holds more than one statement: send one statement per task (a DO block or a function may do several things)")

// ErrNoStatement: the text holds only whitespace, comments and semicolons.
var ErrNoStatement = errors.New("holds no statement, only comments or semicolons")

// CheckOneStatement reports whether text is exactly one SQL statement, lexed as
// PostgreSQL's scanner lexes it (with standard_conforming_strings on, the default):
// semicolons inside 'strings' (a quote doubled inside is one quote), E'strings' (with
// backslash escapes), "identifiers", $tag$dollar quotes$tag$, -- line comments and nested
// /* block comments */ separate nothing. A semicolon anywhere else ends a statement; one at the end is allowed.
// The lexer is stricter than PostgreSQL in one place: a function body written BEGIN ATOMIC
// … END holds semicolons and is refused (write the body dollar-quoted, AS $$ … $$).
// It returns ErrMultipleStatements, ErrNoStatement, or an error naming an unterminated
// quote or comment.
func CheckOneStatement(text string) error {
	statements := 0
	inStatement := false // a token of the current statement was seen
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case isSQLSpace(c):
			i++
			continue
		case c == '-' && strings.HasPrefix(text[i:], "--"):
			end := strings.IndexAny(text[i:], "\n\r")
			if end < 0 {
				return finish(statements, inStatement)
			}
			i += end
			continue
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			n, err := skipBlockComment(text[i:])
			if err != nil {
				return err
			}
			i += n
			continue
		case c == ';':
			if inStatement {
				statements++
				inStatement = false
				if statements > 1 {
					return ErrMultipleStatements
				}
			}
			i++
			continue
		}
		if !inStatement && statements == 1 {
			return ErrMultipleStatements // a second statement begins after the first one's semicolon
		}
		inStatement = true
		n, err := skipToken(text[i:])
		if err != nil {
			return err
		}
		i += n
	}
	return finish(statements, inStatement)
}

func finish(statements int, inStatement bool) error {
	if inStatement {
		statements++
	}
	switch {
	case statements == 0:
		return ErrNoStatement
	case statements > 1:
		return ErrMultipleStatements
	}
	return nil
}

// isSQLSpace is PostgreSQL's whitespace (scan.l's space).
func isSQLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// isIdentStart and isIdentCont are PostgreSQL's identifier characters (bytes from 0x80 up
// are letters to it, whatever the encoding); an identifier may hold '$' after its start.
func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isIdentCont(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9' || c == '$'
}

// skipBlockComment returns the length of the block comment text starts with; block
// comments nest.
func skipBlockComment(text string) (int, error) {
	depth := 0
	for i := 0; i < len(text); {
		switch {
		case strings.HasPrefix(text[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(text[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i, nil
			}
		default:
			i++
		}
	}
	return 0, errors.New("has an unterminated /* comment")
}

// skipToken returns the length of the token text starts with (not whitespace, a comment
// or a semicolon): a quoted string or identifier, a dollar quote, a word, or one other
// character.
func skipToken(text string) (int, error) {
	c := text[0]
	switch {
	case c == '\'':
		return skipQuoted(text, 0, '\'', false)
	case c == '"':
		return skipQuoted(text, 0, '"', false)
	case c == '$':
		if n, ok := dollarTag(text); ok {
			tag := text[:n]
			end := strings.Index(text[n:], tag)
			if end < 0 {
				return 0, fmt.Errorf("has an unterminated dollar quote %s", tag)
			}
			return n + end + n, nil
		}
		return 1, nil // a parameter ($1) or a lone $
	case isIdentStart(c):
		// A string's prefix: E'…' (backslash escapes), U&'…' and U&"…", B'…', X'…', N'…'.
		switch {
		case (c == 'e' || c == 'E') && len(text) > 1 && text[1] == '\'':
			return skipQuoted(text, 1, '\'', true)
		case (c == 'u' || c == 'U') && strings.HasPrefix(text[1:], "&'"):
			return skipQuoted(text, 2, '\'', false)
		case (c == 'u' || c == 'U') && strings.HasPrefix(text[1:], "&\""):
			return skipQuoted(text, 2, '"', false)
		case strings.ContainsRune("bBxXnN", rune(c)) && len(text) > 1 && text[1] == '\'':
			return skipQuoted(text, 1, '\'', false)
		}
		i := 1
		for i < len(text) && isIdentCont(text[i]) {
			i++
		}
		return i, nil
	}
	return 1, nil
}

// skipQuoted returns the length of the quoted token whose opening quote is at text[open]:
// a doubled quote stands for itself, and with backslashes a backslash escapes the next byte.
func skipQuoted(text string, open int, quote byte, backslashes bool) (int, error) {
	for i := open + 1; i < len(text); i++ {
		switch text[i] {
		case '\\':
			if backslashes {
				i++
			}
		case quote:
			if i+1 < len(text) && text[i+1] == quote {
				i++
				continue
			}
			return i + 1, nil
		}
	}
	if quote == '"' {
		return 0, errors.New(`has an unterminated "quoted identifier"`)
	}
	return 0, errors.New("has an unterminated 'quoted string'")
}

// dollarTag returns the length of the dollar-quote delimiter text starts with ($$ or
// $tag$), if it starts with one.
func dollarTag(text string) (int, bool) {
	i := 1
	if i < len(text) && isIdentStart(text[i]) {
		for i < len(text) && isIdentCont(text[i]) && text[i] != '$' {
			i++
		}
	}
	if i < len(text) && text[i] == '$' {
		return i + 1, true
	}
	return 0, false
}
