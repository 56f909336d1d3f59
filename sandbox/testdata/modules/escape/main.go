// Command escape tries to leave its sandbox: read a file of the host, write
// one, connect to a socket, read the environment and the arguments. It
// reports what each attempt got.
package main

import (
	"encoding/json"
	"net"
	"os"
	"time"
)

func main() {
	var req struct {
		Arguments struct {
			Read  string `json:"read"`
			Write string `json:"write"`
			Dial  string `json:"dial"`
		} `json:"arguments"`
	}
	json.NewDecoder(os.Stdin).Decode(&req)
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	out := map[string]any{}
	_, err := os.ReadFile(req.Arguments.Read)
	out["read"] = errText(err)
	out["write"] = errText(os.WriteFile(req.Arguments.Write, []byte("escaped"), 0o644))
	_, err = os.ReadDir("/")
	out["list"] = errText(err)
	c, err := net.DialTimeout("tcp", req.Arguments.Dial, time.Second)
	if err == nil {
		c.Close()
	}
	out["dial"] = errText(err)
	out["environ"] = os.Environ()
	out["args"] = os.Args
	wd, _ := os.Getwd()
	out["wd"] = wd
	json.NewEncoder(os.Stdout).Encode(map[string]any{"summary": "escape attempts", "data": out})
}
