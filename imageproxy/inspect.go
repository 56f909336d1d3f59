package imageproxy

import (
	"bytes"
	"encoding/binary"
)

// The four formats the proxy accepts (spec: "Allowed formats: PNG, JPEG, GIF,
// WebP") and the one Content-Type each must be served with.
const (
	formatPNG  = "png"
	formatJPEG = "jpeg"
	formatGIF  = "gif"
	formatWebP = "webp"
)

var contentTypes = map[string]string{
	formatPNG:  "image/png",
	formatJPEG: "image/jpeg",
	formatGIF:  "image/gif",
	formatWebP: "image/webp",
}

// formatOfMediaType returns the format a media type (already lower case,
// without parameters) names, or "" for any other type. Only the registered
// names count: image/jpg or image/x-png are refused like text/html.
func formatOfMediaType(mediaType string) string {
	for f, t := range contentTypes {
		if t == mediaType {
			return f
		}
	}
	return ""
}

var (
	pngMagic  = []byte("\x89PNG\r\n\x1a\n")
	jpegMagic = []byte{0xFF, 0xD8, 0xFF}
)

// sniff returns the format the magic bytes at the start of b name, or "".
func sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, pngMagic):
		return formatPNG
	case bytes.HasPrefix(b, jpegMagic):
		return formatJPEG
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return formatGIF
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return formatWebP
	}
	return ""
}

// info is what the headers of an image say, learnt without decoding pixels.
type info struct {
	format        string
	width, height int // the canvas: PNG IHDR, GIF logical screen, JPEG SOF, WebP canvas
	frames        int // 1 for a static image

	// firstWidth and firstHeight are the size of the image that decoding the
	// first frame must produce.
	firstWidth, firstHeight int
	// decodeBytes estimates, from above, what decoding the first frame
	// allocates; it weighs the decode against Fetcher.MaxDecodeMemory.
	decodeBytes int64

	// webpFrame holds the chunks of the first ANMF frame of an animated WebP
	// (ALPH, VP8 or VP8L), and webpFrameAlpha whether they include ALPH.
	webpFrame      []byte
	webpFrameAlpha bool
}

// inspect reads the headers of an image of the format sniff found, counts its
// frames and estimates the memory its first-frame decode needs. It only walks
// the structure (chunks, segments, blocks), never inflating or decoding pixel
// data, so its work is linear in len(b) and it allocates nothing in
// proportion to the declared size. Errors are *Rejection values: a structure
// that is broken or truncated is reasonCorrupt; a JPEG coding process the
// decoder lacks is unsupported_format. Limits are checked by the caller;
// after an error the info still holds the size and the frames counted so far,
// so that what the headers declare can be refused by its own reason.
func inspect(b []byte) (info, error) {
	switch sniff(b) {
	case formatPNG:
		return inspectPNG(b)
	case formatJPEG:
		return inspectJPEG(b)
	case formatGIF:
		return inspectGIF(b)
	case formatWebP:
		return inspectWebP(b)
	}
	return info{}, reject(ReasonUnsupportedFormat, "body is not PNG, JPEG, GIF or WebP")
}

// PNG and APNG (https://www.w3.org/TR/png-3/): a signature, then chunks of
// length, type, data and CRC; IHDR first, IEND last. An animated PNG has one
// acTL before the first IDAT and one fcTL per frame; num_frames of acTL must
// equal the number of fcTL chunks.
func inspectPNG(b []byte) (info, error) {
	in := info{format: formatPNG, frames: 1}
	var (
		seenIHDR, seenIDAT, seenACTL bool
		depth, colorType, interlace  byte
		declaredFrames               uint32
		fcTLs                        int
	)
	p := b[len(pngMagic):]
	for {
		if len(p) < 12 {
			return in, corrupt("png: truncated before IEND")
		}
		n := binary.BigEndian.Uint32(p)
		if n > 1<<31-1 || uint64(n) > uint64(len(p)-12) {
			return in, corrupt("png: chunk %q runs past the end", p[4:8])
		}
		typ, data := string(p[4:8]), p[8:8+n]
		p = p[12+n:]
		if !seenIHDR && typ != "IHDR" {
			return in, corrupt("png: first chunk is %q, not IHDR", typ)
		}
		switch typ {
		case "IHDR":
			if seenIHDR || n != 13 {
				return in, corrupt("png: repeated or malformed IHDR")
			}
			seenIHDR = true
			w, h := binary.BigEndian.Uint32(data), binary.BigEndian.Uint32(data[4:])
			if w == 0 || h == 0 || w > 1<<31-1 || h > 1<<31-1 {
				return in, corrupt("png: IHDR size %dx%d", w, h)
			}
			depth, colorType, interlace = data[8], data[9], data[12]
			if data[10] != 0 || data[11] != 0 || interlace > 1 {
				return in, corrupt("png: unknown compression, filter or interlace method")
			}
			in.width, in.height = int(w), int(h)
		case "acTL":
			if seenACTL || seenIDAT || n != 8 {
				return in, corrupt("png: repeated, late or malformed acTL")
			}
			seenACTL = true
			declaredFrames = binary.BigEndian.Uint32(data)
			if declaredFrames == 0 {
				return in, corrupt("png: acTL declares 0 frames")
			}
			in.frames = int(min(declaredFrames, 1<<31-1))
		case "fcTL":
			if n != 26 {
				return in, corrupt("png: malformed fcTL")
			}
			fw, fh := binary.BigEndian.Uint32(data[4:]), binary.BigEndian.Uint32(data[8:])
			fx, fy := binary.BigEndian.Uint32(data[12:]), binary.BigEndian.Uint32(data[16:])
			if fw == 0 || fh == 0 || uint64(fx)+uint64(fw) > uint64(in.width) || uint64(fy)+uint64(fh) > uint64(in.height) {
				return in, corrupt("png: fcTL frame %dx%d at %d,%d outside the %dx%d canvas", fw, fh, fx, fy, in.width, in.height)
			}
			fcTLs++
			if seenACTL {
				in.frames = max(in.frames, fcTLs)
			}
		case "IDAT":
			seenIDAT = true
		case "IEND":
			if !seenIDAT {
				return in, corrupt("png: no IDAT")
			}
			if seenACTL && uint64(fcTLs) != uint64(declaredFrames) {
				// in.frames keeps the larger count, for the frame limit.
				return in, corrupt("png: acTL declares %d frames but there are %d fcTL chunks", declaredFrames, fcTLs)
			}
			// image/png decodes into 1 byte per pixel for a palette, 8 for 16-bit
			// samples, at most 4 otherwise; interlaced images need the pass too.
			bpp := int64(4)
			switch {
			case depth == 16:
				bpp = 8
			case colorType == 3:
				bpp = 1
			}
			in.firstWidth, in.firstHeight = in.width, in.height
			in.decodeBytes = int64(in.width) * int64(in.height) * bpp
			if interlace == 1 {
				in.decodeBytes *= 2
			}
			return in, nil
		}
	}
}

// GIF (GIF89a specification): a header and logical screen descriptor with an
// optional global color table, then blocks: extensions (0x21), images (0x2C,
// each one frame) and the trailer (0x3B). The trailer is required.
func inspectGIF(b []byte) (info, error) {
	in := info{format: formatGIF}
	if len(b) < 13 {
		return in, corrupt("gif: truncated header")
	}
	in.width = int(binary.LittleEndian.Uint16(b[6:]))
	in.height = int(binary.LittleEndian.Uint16(b[8:]))
	if in.width == 0 || in.height == 0 {
		return in, corrupt("gif: logical screen %dx%d", in.width, in.height)
	}
	p := b[13:]
	if b[10]&0x80 != 0 {
		n := 3 << (1 + b[10]&7)
		if len(p) < n {
			return in, corrupt("gif: truncated global color table")
		}
		p = p[n:]
	}
	var firstInterlaced bool
	var err error
	for {
		if len(p) == 0 {
			return in, corrupt("gif: no trailer")
		}
		block := p[0]
		p = p[1:]
		switch block {
		case 0x21: // extension: a label, then data sub-blocks
			if len(p) == 0 {
				return in, corrupt("gif: truncated extension")
			}
			if p, err = skipGIFSubBlocks(p[1:]); err != nil {
				return in, err
			}
		case 0x2C: // image descriptor
			if len(p) < 9 {
				return in, corrupt("gif: truncated image descriptor")
			}
			left, top := int(binary.LittleEndian.Uint16(p)), int(binary.LittleEndian.Uint16(p[2:]))
			w, h := int(binary.LittleEndian.Uint16(p[4:])), int(binary.LittleEndian.Uint16(p[6:]))
			fields := p[8]
			p = p[9:]
			if w == 0 || h == 0 || left+w > in.width || top+h > in.height {
				return in, corrupt("gif: frame %dx%d at %d,%d outside the %dx%d screen", w, h, left, top, in.width, in.height)
			}
			if in.frames == 0 {
				in.firstWidth, in.firstHeight = w, h
				firstInterlaced = fields&0x40 != 0
			}
			in.frames++
			if fields&0x80 != 0 {
				n := 3 << (1 + fields&7)
				if len(p) < n {
					return in, corrupt("gif: truncated local color table")
				}
				p = p[n:]
			}
			if len(p) == 0 {
				return in, corrupt("gif: truncated image data")
			}
			if p, err = skipGIFSubBlocks(p[1:]); err != nil { // after the LZW code size
				return in, err
			}
		case 0x3B: // trailer
			if in.frames == 0 {
				return in, corrupt("gif: no image")
			}
			// image/gif decodes the first frame into 1 byte per pixel, and
			// copies it once more to undo interlacing.
			in.decodeBytes = int64(in.firstWidth) * int64(in.firstHeight)
			if firstInterlaced {
				in.decodeBytes *= 2
			}
			return in, nil
		default:
			return in, corrupt("gif: unknown block 0x%02x", block)
		}
	}
}

func skipGIFSubBlocks(p []byte) ([]byte, error) {
	for {
		if len(p) == 0 {
			return nil, corrupt("gif: truncated data sub-blocks")
		}
		n := int(p[0])
		p = p[1:]
		if n == 0 {
			return p, nil
		}
		if len(p) < n {
			return nil, corrupt("gif: truncated data sub-block")
		}
		p = p[n:]
	}
}

// JPEG (ITU T.81): markers, most followed by a length and a segment. The
// frame header (SOFn) gives the size and components; a JPEG has one frame.
// image/jpeg implements SOF0, SOF1 and SOF2 with 8-bit samples.
func inspectJPEG(b []byte) (info, error) {
	in := info{format: formatJPEG, frames: 1}
	var (
		jfif, adobe    bool
		adobeTransform byte
	)
	p := b[2:]
	for {
		// A marker is 0xFF, any number of 0xFF fill bytes, then its code.
		if len(p) < 2 || p[0] != 0xFF {
			return in, corrupt("jpeg: no frame header before the end or a stray byte")
		}
		for len(p) > 2 && p[1] == 0xFF {
			p = p[1:]
		}
		marker := p[1]
		p = p[2:]
		switch {
		case marker == 0x01 || 0xD0 <= marker && marker <= 0xD7: // TEM, RSTn: no segment
			continue
		case marker == 0x00 || marker == 0xD8 || marker == 0xD9 || marker == 0xDA || marker == 0xFF:
			return in, corrupt("jpeg: marker 0x%02x before the frame header", marker)
		}
		if len(p) < 2 {
			return in, corrupt("jpeg: truncated segment")
		}
		n := int(binary.BigEndian.Uint16(p))
		if n < 2 || n > len(p) {
			return in, corrupt("jpeg: segment 0x%02x runs past the end", marker)
		}
		seg := p[2:n]
		p = p[n:]
		switch marker {
		case 0xE0: // APP0
			jfif = jfif || bytes.HasPrefix(seg, []byte("JFIF\x00"))
		case 0xEE: // APP14
			if len(seg) >= 12 && bytes.HasPrefix(seg, []byte("Adobe")) {
				adobe, adobeTransform = true, seg[11]
			}
		case 0xC0, 0xC1, 0xC2: // baseline, extended sequential, progressive
			return jpegFrame(in, seg, marker == 0xC2, jfif, adobe, adobeTransform)
		case 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF:
			return in, reject(ReasonUnsupportedFormat, "jpeg: coding process SOF%d is not supported", marker-0xC0)
		}
	}
}

func jpegFrame(in info, seg []byte, progressive, jfif, adobe bool, adobeTransform byte) (info, error) {
	if len(seg) < 6 {
		return in, corrupt("jpeg: short frame header")
	}
	if seg[0] != 8 {
		return in, reject(ReasonUnsupportedFormat, "jpeg: %d-bit samples are not supported", seg[0])
	}
	in.height = int(binary.BigEndian.Uint16(seg[1:]))
	in.width = int(binary.BigEndian.Uint16(seg[3:]))
	nc := int(seg[5])
	if in.width == 0 || in.height == 0 {
		return in, corrupt("jpeg: frame size %dx%d", in.width, in.height)
	}
	if nc != 1 && nc != 3 && nc != 4 {
		return in, reject(ReasonUnsupportedFormat, "jpeg: %d components are not supported", nc)
	}
	if len(seg) < 6+3*nc {
		return in, corrupt("jpeg: short frame header")
	}
	hmax, vmax := 1, 1
	for i := range nc {
		hv := seg[7+3*i]
		h, v := int(hv>>4), int(hv&15)
		if h < 1 || h > 4 || v < 1 || v > 4 {
			return in, corrupt("jpeg: sampling factors %dx%d", h, v)
		}
		hmax, vmax = max(hmax, h), max(vmax, v)
	}
	// image/jpeg allocates each component plane rounded up to whole MCUs,
	// keeps a [64]int32 per block between the scans of a progressive image,
	// and converts RGB and 4-component images to a 4-byte-per-pixel image.
	mxx := int64((in.width + 8*hmax - 1) / (8 * hmax))
	myy := int64((in.height + 8*vmax - 1) / (8 * vmax))
	for i := range nc {
		hv := seg[7+3*i]
		blocks := mxx * int64(hv>>4) * myy * int64(hv&15)
		in.decodeBytes += blocks * 64
		if progressive {
			in.decodeBytes += blocks * 64 * 4
		}
	}
	isRGB := nc == 3 && !jfif && (adobe && adobeTransform == 0 || seg[6] == 'R' && seg[9] == 'G' && seg[12] == 'B')
	if nc == 4 || isRGB {
		in.decodeBytes += 4 * int64(in.width) * int64(in.height)
	}
	in.firstWidth, in.firstHeight = in.width, in.height
	return in, nil
}

// WebP (RFC 9649): a RIFF container of chunks. The first chunk is VP8 (lossy),
// VP8L (lossless) or VP8X (extended: canvas size and flags, then ALPH and VP8
// or VP8L, or for an animation ANIM and one ANMF per frame).
func inspectWebP(b []byte) (info, error) {
	in := info{format: formatWebP, frames: 1}
	size := binary.LittleEndian.Uint32(b[4:])
	if size < 4 || uint64(size) > uint64(len(b)-8) {
		return in, corrupt("webp: RIFF size %d but %d bytes follow", size, len(b)-8)
	}
	p := b[12 : 8+size]
	fourcc, payload, rest, err := nextWebPChunk(p)
	if err != nil {
		return in, err
	}
	switch fourcc {
	case "VP8 ", "VP8L":
		in.width, in.height, _, in.decodeBytes, err = webpImage(p)
		in.firstWidth, in.firstHeight = in.width, in.height
		return in, err
	case "VP8X":
		if len(payload) < 10 {
			return in, corrupt("webp: short VP8X")
		}
		in.width = int(le24(payload[4:])) + 1
		in.height = int(le24(payload[7:])) + 1
		in.firstWidth, in.firstHeight = in.width, in.height
		if payload[0]&0x02 == 0 { // still image
			w, h, _, cost, err := webpImage(rest)
			if err != nil {
				return in, err
			}
			if w != in.width || h != in.height {
				return in, corrupt("webp: image %dx%d on a %dx%d canvas", w, h, in.width, in.height)
			}
			in.decodeBytes = cost
			return in, nil
		}
		return inspectWebPAnimation(in, rest)
	}
	return in, corrupt("webp: first chunk is %q", fourcc)
}

func inspectWebPAnimation(in info, p []byte) (info, error) {
	in.frames = 0
	seenANIM := false
	for len(p) > 0 {
		fourcc, payload, rest, err := nextWebPChunk(p)
		if err != nil {
			return in, err
		}
		p = rest
		switch fourcc {
		case "ANIM":
			seenANIM = true
		case "ANMF":
			if !seenANIM || len(payload) < 16 {
				return in, corrupt("webp: ANMF without ANIM, or short")
			}
			x, y := int(le24(payload))*2, int(le24(payload[3:]))*2
			w, h := int(le24(payload[6:]))+1, int(le24(payload[9:]))+1
			if x+w > in.width || y+h > in.height {
				return in, corrupt("webp: frame %dx%d at %d,%d outside the %dx%d canvas", w, h, x, y, in.width, in.height)
			}
			if in.frames == 0 {
				fw, fh, alpha, cost, err := webpImage(payload[16:])
				if err != nil {
					return in, err
				}
				if fw != w || fh != h {
					return in, corrupt("webp: first frame bitstream %dx%d in a %dx%d frame", fw, fh, w, h)
				}
				in.firstWidth, in.firstHeight = w, h
				in.decodeBytes = cost
				in.webpFrame, in.webpFrameAlpha = payload[16:], alpha
			}
			in.frames++
		}
	}
	if in.frames == 0 {
		return in, corrupt("webp: animation without frames")
	}
	return in, nil
}

// webpImage walks chunks up to the first VP8 or VP8L bitstream and returns
// its size, whether an ALPH chunk came before it, and the memory
// golang.org/x/image/webp needs to decode it: lossy decodes into 4:2:0 YCbCr
// of whole macroblocks plus one byte of alpha per pixel; lossless into 4 bytes
// per pixel, and once more for a color-indexing transform.
func webpImage(p []byte) (w, h int, alpha bool, cost int64, err error) {
	for len(p) > 0 {
		fourcc, payload, rest, err := nextWebPChunk(p)
		if err != nil {
			return 0, 0, false, 0, err
		}
		p = rest
		switch fourcc {
		case "ALPH":
			alpha = true
		case "VP8 ":
			if len(payload) < 10 || payload[0]&1 != 0 || !bytes.Equal(payload[3:6], []byte{0x9d, 0x01, 0x2a}) {
				return 0, 0, false, 0, corrupt("webp: malformed VP8 key frame header")
			}
			w = int(binary.LittleEndian.Uint16(payload[6:]) & 0x3fff)
			h = int(binary.LittleEndian.Uint16(payload[8:]) & 0x3fff)
			if w == 0 || h == 0 {
				return 0, 0, false, 0, corrupt("webp: VP8 size %dx%d", w, h)
			}
			mbw, mbh := int64(w+15)/16, int64(h+15)/16
			cost = mbw * 16 * mbh * 16 * 3 / 2
			if alpha {
				cost += int64(w) * int64(h)
			}
			return w, h, alpha, cost, nil
		case "VP8L":
			if len(payload) < 5 || payload[0] != 0x2f {
				return 0, 0, false, 0, corrupt("webp: malformed VP8L header")
			}
			bits := binary.LittleEndian.Uint32(payload[1:])
			if bits>>29 != 0 {
				return 0, 0, false, 0, corrupt("webp: VP8L version %d", bits>>29)
			}
			w, h = int(bits&0x3fff)+1, int(bits>>14&0x3fff)+1
			return w, h, alpha, 8 * int64(w) * int64(h), nil
		}
	}
	return 0, 0, false, 0, corrupt("webp: no VP8 or VP8L bitstream")
}

// nextWebPChunk splits the first RIFF chunk off p. A missing pad byte after
// the last chunk is tolerated.
func nextWebPChunk(p []byte) (fourcc string, payload, rest []byte, err error) {
	if len(p) < 8 {
		return "", nil, nil, corrupt("webp: truncated chunk header")
	}
	n := binary.LittleEndian.Uint32(p[4:])
	if uint64(n) > uint64(len(p)-8) {
		return "", nil, nil, corrupt("webp: chunk %q runs past the end", p[:4])
	}
	end := min(8+int(n)+int(n&1), len(p))
	return string(p[:4]), p[8 : 8+n], p[end:], nil
}

func le24(b []byte) uint32 { return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 }

// webpFrameFile wraps the first frame of an animated WebP in a minimal RIFF
// of its own, which golang.org/x/image/webp (which does not implement
// animation) can decode: the frame's chunks as they are, behind a VP8X that
// declares the frame's size and alpha when the frame has an ALPH chunk.
func webpFrameFile(in *info) []byte {
	n := 4 + len(in.webpFrame)
	if in.webpFrameAlpha {
		n += 18
	}
	out := make([]byte, 0, 8+n)
	out = append(out, "RIFF"...)
	out = binary.LittleEndian.AppendUint32(out, uint32(n))
	out = append(out, "WEBP"...)
	if in.webpFrameAlpha {
		out = append(out, "VP8X"...)
		out = binary.LittleEndian.AppendUint32(out, 10)
		out = append(out, 0x10, 0, 0, 0) // flags: alpha
		w, h := uint32(in.firstWidth-1), uint32(in.firstHeight-1)
		out = append(out, byte(w), byte(w>>8), byte(w>>16), byte(h), byte(h>>8), byte(h>>16))
	}
	return append(out, in.webpFrame...)
}
