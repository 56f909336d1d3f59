package imageproxy

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/png"
	"os"
	"runtime"
	"strings"
	"testing"
)

// FuzzInspect feeds arbitrary bytes to the header parser and frame counter:
// it must never panic, must answer only with the contract's format reasons,
// and what it accepts must be consistent. Small accepted images are decoded
// too, and a decoder panic (which the proxy would turn into a rejection) is
// reported as a failure, to be known.
//
//	go test -fuzz=FuzzInspect ./imageproxy
func FuzzInspect(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasSuffix(e.Name(), ".md") {
			f.Add(readTestdata(f, e.Name()))
		}
	}
	f.Add(apng(f, 3, 2, 3, 3))
	f.Add(apng(f, 2, 2, 2, 5))
	f.Add(pngWithIHDR(f, 100000, 100000))
	f.Add(gifFrames(f, 4, 4, 2, 2, 3))
	f.Add(gifWithScreen(f, 65535, 65535))
	f.Add(jpegWithSOF(f, 65000, 65000))
	f.Add(webpWithCanvas(f, 1<<24, 1<<24))
	f.Add(webpAnimation(f, 3))

	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := inspect(b)
		if err != nil {
			var rej *Rejection
			if !errors.As(err, &rej) || (rej.Reason != ReasonUnsupportedFormat && rej.Reason != reasonCorrupt) {
				t.Fatalf("inspect error %v, want a format rejection", err)
			}
			if in.width < 0 || in.height < 0 || in.frames < 0 {
				t.Fatalf("partial info %+v", in)
			}
			return
		}
		switch {
		case in.format != sniff(b):
			t.Fatalf("format %q, magic says %q", in.format, sniff(b))
		case in.width < 1 || in.height < 1 || in.frames < 1:
			t.Fatalf("accepted %dx%d, %d frames", in.width, in.height, in.frames)
		case in.firstWidth < 1 || in.firstHeight < 1 || in.firstWidth > in.width || in.firstHeight > in.height:
			t.Fatalf("first frame %dx%d on %dx%d", in.firstWidth, in.firstHeight, in.width, in.height)
		case in.decodeBytes < 1:
			t.Fatalf("decode estimate %d", in.decodeBytes)
		}
		if int64(in.width)*int64(in.height)*int64(in.frames) <= 1<<16 {
			err := decode(b, &in)
			var rej *Rejection
			if err != nil && (!errors.As(err, &rej) || rej.Reason != reasonCorrupt) {
				t.Fatalf("decode error %v, want nil or a corrupt-file rejection", err)
			}
			if err != nil && strings.Contains(rej.Detail, "panicked") {
				t.Fatalf("decoder panic: %s", rej.Detail)
			}
		}
	})
}

// TestDecodeEstimate checks the memory estimate that weighs each decode
// against MaxDecodeMemory: what decoding the first frame really allocates
// stays within the estimate (plus the decoders' fixed buffers).
func TestDecodeEstimate(t *testing.T) {
	const fixed = 256 << 10 // zlib window, bufio, tables: not proportional to the image
	nrgba := image.NewNRGBA(image.Rect(0, 0, 600, 600))
	copy(nrgba.Pix, noisyGray(1200, 1200).Pix)
	rgba64 := image.NewNRGBA64(image.Rect(0, 0, 400, 400))
	copy(rgba64.Pix, noisyGray(800, 800).Pix)
	paletted := image.NewPaletted(image.Rect(0, 0, 800, 800), color.Palette{color.Black, color.White})
	noisyPaletted := image.NewPaletted(image.Rect(0, 0, 500, 500), palette.Plan9)
	copy(noisyPaletted.Pix, noisyGray(500, 500).Pix)
	var plainGIF bytes.Buffer
	gif.Encode(&plainGIF, noisyPaletted, nil)
	var pngNoCompression bytes.Buffer
	(&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&pngNoCompression, noisyGray(600, 600))
	color420 := image.NewRGBA(image.Rect(0, 0, 800, 600))
	copy(color420.Pix, noisyGray(1600, 1200).Pix)

	files := map[string][]byte{
		"PNG NRGBA 600x600":        encodePNG(t, nrgba),
		"PNG NRGBA64 400x400":      encodePNG(t, rgba64),
		"PNG paletted 800x800":     encodePNG(t, paletted),
		"PNG gray 600x600":         pngNoCompression.Bytes(),
		"JPEG gray 800x800":        encodeJPEG(t, noisyGray(800, 800)),
		"JPEG 4:2:0 800x600":       encodeJPEG(t, color420),
		"GIF 500x500":              plainGIF.Bytes(),
		"APNG 32x32 x4":            readTestdata(t, "anim.png"),
		"interlaced PNG":           readTestdata(t, "basn3p04-31i.png"),
		"progressive JPEG":         readTestdata(t, "video-001.progressive.jpeg"),
		"CMYK JPEG":                readTestdata(t, "video-001.cmyk.jpeg"),
		"RGB JPEG":                 readTestdata(t, "video-001.rgb.jpeg"),
		"WebP lossless 386x395":    readTestdata(t, "tux.lossless.webp"),
		"WebP lossy 150x100":       readTestdata(t, "blue-purple-pink.lossy.webp"),
		"WebP lossy alpha":         readTestdata(t, "lossy-alpha.webp"),
		"WebP animated lossy":      readTestdata(t, "anim-lossy.webp"),
		"WebP lossless 4096x2":     readTestdata(t, "w4096.lossless.webp"),
		"GIF interlaced (Go data)": readTestdata(t, "video-001.interlaced.gif"),
	}
	for name, b := range files {
		in, err := inspect(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err = decode(b, &in)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		used := int64(after.TotalAlloc - before.TotalAlloc)
		t.Logf("%-26s estimate %9d, allocated %9d", name, in.decodeBytes, used)
		if used > in.decodeBytes+fixed {
			t.Errorf("%s: decoding allocated %d bytes, over the estimate %d + %d", name, used, in.decodeBytes, fixed)
		}
	}
}
