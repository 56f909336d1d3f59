package kit

// Text is looked at eight bytes at a time, in words: inside a WebAssembly
// module a loop over single bytes costs several times as much per byte.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// word returns the eight bytes of s at i as a little-endian word; the
// compiler makes it one load.
func word[T ~string | ~[]byte](s T, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// has returns a word with the high bit of each byte of x equal to c set (and
// perhaps of bytes after such a byte); zero when no byte is c.
func has(x uint64, c byte) uint64 {
	x ^= ones * uint64(c)
	return (x - ones) &^ x & highs
}

// below returns a word with the high bit of each byte of x less than c set
// (and perhaps of bytes after such a byte); zero when none is; c is at most
// 0x80.
func below(x uint64, c byte) uint64 { return (x - ones*uint64(c)) &^ x & highs }

// stringRun returns how many bytes at the start of s a JSON string holds as
// they are, up to the first quote, backslash or control character (or
// len(s)), and whether they are all ASCII.
func stringRun(s []byte) (n int, ascii bool) {
	var high uint64
	for ; n+8 <= len(s); n += 8 {
		x := word(s, n)
		if has(x, '"')|has(x, '\\')|below(x, 0x20) != 0 {
			break
		}
		high |= x
	}
	ascii = high&highs == 0
	for ; n < len(s); n++ {
		c := s[n]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		if c >= 0x80 {
			ascii = false
		}
	}
	return n, ascii
}

// plainRun returns how many bytes at the start of s encoding/json writes as
// they are inside a string: up to the first byte that is not ASCII, a
// control character, a quote, a backslash, '<', '>' or '&' (or len(s)).
func plainRun(s string) int {
	n := 0
	for ; n+8 <= len(s); n += 8 {
		x := word(s, n)
		if x&highs|below(x, 0x20)|has(x, '"')|has(x, '\\')|has(x, '<')|has(x, '>')|has(x, '&') != 0 {
			break
		}
	}
	for ; n < len(s); n++ {
		switch c := s[n]; {
		case c >= 0x80, c < 0x20, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return n
		}
	}
	return n
}
