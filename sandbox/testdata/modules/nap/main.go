// Command nap sleeps for 20 ms, as a plugin waiting between retries would,
// and then answers.
package main

import (
	"fmt"
	"time"
)

func main() {
	begun := time.Now()
	time.Sleep(20 * time.Millisecond)
	fmt.Printf(`{"summary": "rested", "data": {"slept": %t}}`+"\n", time.Since(begun) >= 20*time.Millisecond)
}
