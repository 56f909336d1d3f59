// Command sleep sleeps for an hour: the host must stop it at its wall time.
package main

import "time"

func main() {
	time.Sleep(time.Hour)
}
