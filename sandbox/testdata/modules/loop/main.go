// Command loop never ends: the host must stop it at its wall time.
package main

func main() {
	n := 0
	for {
		n++
	}
}
