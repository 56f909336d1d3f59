// Command memory keeps allocating until the host refuses more memory.
package main

import "fmt"

func main() {
	var keep [][]byte
	for {
		b := make([]byte, 4<<20)
		b[len(b)-1] = 1
		keep = append(keep, b)
		if len(keep) < 0 {
			fmt.Println(len(keep))
		}
	}
}
