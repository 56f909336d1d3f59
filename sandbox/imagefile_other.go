//go:build !linux

package sandbox

// imageFile is an image's memory file, which only Linux has here: elsewhere
// instances are restored by comparing every page.
type imageFile struct{}

func newImageFile([]byte) *imageFile { return nil }

func (f *imageFile) close() {}

func (f *imageFile) mapOnto([]byte) bool { return false }

func (f *imageFile) restoreOwnPages(mem, img []byte, entries *[]byte) bool { return false }

// RestoreMode says how kept reactor instances are restored between runs on
// this system: "written pages" (only the pages a run wrote are compared
// with the image) or "every page", with why.
func RestoreMode() (mode, why string) {
	return "every page", "memory files and pagemap are used on Linux only"
}
