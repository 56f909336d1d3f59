package imageproxy

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

// Builders of test images: real encodes by the standard library, and
// crafted files (bombs, animations) assembled chunk by chunk as the format
// specifications describe them.

func encodePNG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 75}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// grayPNG is a real w x h 8-bit gray PNG.
func grayPNG(t testing.TB, w, h int) []byte {
	return encodePNG(t, image.NewGray(image.Rect(0, 0, w, h)))
}

type pngChunk struct {
	typ  string
	data []byte
}

// pngChunks splits a PNG into its chunks.
func pngChunks(t testing.TB, b []byte) []pngChunk {
	t.Helper()
	var out []pngChunk
	for p := b[8:]; len(p) >= 12; {
		n := binary.BigEndian.Uint32(p)
		out = append(out, pngChunk{string(p[4:8]), p[8 : 8+n]})
		p = p[12+n:]
	}
	return out
}

// assemblePNG writes the signature and the chunks, with their CRCs.
func assemblePNG(chunks ...pngChunk) []byte {
	out := append([]byte(nil), pngMagic...)
	for _, c := range chunks {
		out = binary.BigEndian.AppendUint32(out, uint32(len(c.data)))
		start := len(out)
		out = append(out, c.typ...)
		out = append(out, c.data...)
		out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
	}
	return out
}

// pngWithIHDR takes a real 1x1 PNG and declares w x h in its IHDR: the
// bomb "huge declared dimensions in a tiny file".
func pngWithIHDR(t testing.TB, w, h uint32) []byte {
	chunks := pngChunks(t, grayPNG(t, 1, 1))
	ihdr := append([]byte(nil), chunks[0].data...)
	binary.BigEndian.PutUint32(ihdr, w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	chunks[0].data = ihdr
	return assemblePNG(chunks...)
}

// padPNG inserts a tEXt chunk before IEND so that the file is exactly size
// bytes long.
func padPNG(t testing.TB, b []byte, size int) []byte {
	t.Helper()
	chunks := pngChunks(t, b)
	pad := size - len(b) - 12
	if pad < len("Comment\x00") {
		t.Fatalf("cannot pad %d bytes to %d", len(b), size)
	}
	text := append([]byte("Comment\x00"), bytes.Repeat([]byte{'x'}, pad-len("Comment\x00"))...)
	chunks = append(chunks[:len(chunks)-1], pngChunk{"tEXt", text}, chunks[len(chunks)-1])
	out := assemblePNG(chunks...)
	if len(out) != size {
		t.Fatalf("padded to %d bytes, want %d", len(out), size)
	}
	return out
}

// apng builds an animated PNG of w x h with frames frames, each a real
// frame (fcTL, then IDAT for the first and fdAT for the others), and an
// acTL that declares declared frames.
func apng(t testing.TB, w, h, frames, declared int) []byte {
	m := image.NewPaletted(image.Rect(0, 0, w, h), palette.Plan9)
	for i := range m.Pix {
		m.Pix[i] = uint8(i)
	}
	chunks := pngChunks(t, encodePNG(t, m))
	var ihdr, plte pngChunk
	var idat []byte
	for _, c := range chunks {
		switch c.typ {
		case "IHDR":
			ihdr = c
		case "PLTE":
			plte = c
		case "IDAT":
			idat = append(idat, c.data...)
		}
	}
	seq := uint32(0)
	fcTL := func() pngChunk {
		d := make([]byte, 26)
		binary.BigEndian.PutUint32(d, seq)
		binary.BigEndian.PutUint32(d[4:], uint32(w))
		binary.BigEndian.PutUint32(d[8:], uint32(h))
		binary.BigEndian.PutUint16(d[20:], 1)  // delay 1/10 s
		binary.BigEndian.PutUint16(d[22:], 10) //
		seq++
		return pngChunk{"fcTL", d}
	}
	actl := make([]byte, 8)
	binary.BigEndian.PutUint32(actl, uint32(declared))
	out := []pngChunk{ihdr, plte, {"acTL", actl}, fcTL(), {"IDAT", idat}}
	for range frames - 1 {
		out = append(out, fcTL())
		fdat := binary.BigEndian.AppendUint32(nil, seq)
		seq++
		out = append(out, pngChunk{"fdAT", append(fdat, idat...)})
	}
	return assemblePNG(append(out, pngChunk{"IEND", nil})...)
}

// gifFrames encodes a GIF with a screen of sw x sh and frames frames of
// fw x fh each.
func gifFrames(t testing.TB, sw, sh, fw, fh, frames int) []byte {
	t.Helper()
	g := &gif.GIF{Config: image.Config{Width: sw, Height: sh, ColorModel: color.Palette{color.Black, color.White}}}
	for i := range frames {
		m := image.NewPaletted(image.Rect(0, 0, fw, fh), color.Palette{color.Black, color.White})
		m.Pix[0] = uint8(i % 2)
		g.Image = append(g.Image, m)
		g.Delay = append(g.Delay, 10)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// gifWithScreen declares a logical screen of w x h in a real 1x1 GIF.
func gifWithScreen(t testing.TB, w, h uint16) []byte {
	b := gifFrames(t, 1, 1, 1, 1, 1)
	binary.LittleEndian.PutUint16(b[6:], w)
	binary.LittleEndian.PutUint16(b[8:], h)
	return b
}

// jpegWithSOF declares w x h in the frame header of a real 8x8 JPEG.
func jpegWithSOF(t testing.TB, w, h uint16) []byte {
	b := encodeJPEG(t, image.NewGray(image.Rect(0, 0, 8, 8)))
	i := bytes.Index(b, []byte{0xFF, 0xC0})
	if i < 0 {
		t.Fatal("no SOF0 in the encoded JPEG")
	}
	binary.BigEndian.PutUint16(b[i+5:], h)
	binary.BigEndian.PutUint16(b[i+7:], w)
	return b
}

type webpChunk struct {
	fourcc string
	data   []byte
}

func webpChunks(t testing.TB, b []byte) []webpChunk {
	t.Helper()
	var out []webpChunk
	p := b[12 : 8+binary.LittleEndian.Uint32(b[4:])]
	for len(p) >= 8 {
		n := binary.LittleEndian.Uint32(p[4:])
		out = append(out, webpChunk{string(p[:4]), p[8 : 8+n]})
		p = p[min(len(p), 8+int(n)+int(n&1)):]
	}
	return out
}

func assembleWebP(chunks ...webpChunk) []byte {
	var body []byte
	for _, c := range chunks {
		body = append(body, c.fourcc...)
		body = binary.LittleEndian.AppendUint32(body, uint32(len(c.data)))
		body = append(body, c.data...)
		if len(c.data)%2 == 1 {
			body = append(body, 0)
		}
	}
	out := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(4+len(body)))...)
	out = append(out, "WEBP"...)
	return append(out, body...)
}

func vp8x(flags byte, w, h int) webpChunk {
	d := []byte{flags, 0, 0, 0}
	w, h = w-1, h-1
	d = append(d, byte(w), byte(w>>8), byte(w>>16), byte(h), byte(h>>8), byte(h>>16))
	return webpChunk{"VP8X", d}
}

// webpWithCanvas puts the VP8L image of a real lossless WebP on a w x h
// VP8X canvas: the bomb "huge canvas, tiny file".
func webpWithCanvas(t testing.TB, w, h int) []byte {
	chunks := webpChunks(t, readTestdata(t, "tux.lossless.webp"))
	return assembleWebP(vp8x(0, w, h), chunks[0])
}

// webpAnimation rebuilds the animated testdata/anim-lossless.webp with
// frames frames, repeating its ANMF chunks in turn.
func webpAnimation(t testing.TB, frames int) []byte {
	chunks := webpChunks(t, readTestdata(t, "anim-lossless.webp"))
	var head, anmf []webpChunk
	for _, c := range chunks {
		if c.fourcc == "ANMF" {
			anmf = append(anmf, c)
		} else {
			head = append(head, c)
		}
	}
	out := head
	for i := range frames {
		out = append(out, anmf[i%len(anmf)])
	}
	return assembleWebP(out...)
}

// noisyGray is a deterministic w x h gray image with noise that does not
// compress away.
func noisyGray(w, h int) *image.Gray {
	m := image.NewGray(image.Rect(0, 0, w, h))
	x := uint32(2463534242)
	for i := range m.Pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		m.Pix[i] = uint8(x)
	}
	return m
}
