package server

import "fmt"

// runChild runs a subprocess role; see childEnv.
func runChild(role string) int {
	fmt.Println("unknown child role", role)
	return 2
}
