// Command garbage writes something that is not an ExtensionResult.
package main

import "fmt"

func main() {
	fmt.Println("hello, this is not JSON")
}
