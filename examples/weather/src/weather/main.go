// Command weather holds the weather example's two capabilities, built by
// pluginhost build into one module: weather.lookup, the current weather of a
// city, and weather.forecast, the next days', which the weather service
// answers only with the user's API key (the weatherkey connection, which
// the host attaches; this code never sees it). The service's address is the
// Instance's settings/service item, https://localhost:8443 by default.
package main

import (
	"fmt"
	"net/url"
	"strings"

	"pluginhost/kit"
)

func init() { kit.Handle(weather) }

func main() { kit.Main() }

// defaultService is where the weather service is when settings/service does
// not say otherwise; network.hosts must list its host.
const defaultService = "https://localhost:8443"

type day struct {
	City        string  `json:"city"`
	Day         string  `json:"day,omitempty"`
	Temperature float64 `json:"temperature"`
	Sky         string  `json:"sky"`
}

func weather(req *kit.Request) (*kit.Result, error) {
	var args struct {
		City string `json:"city"`
	}
	if err := req.Args(&args); err != nil {
		return nil, err
	}
	service := defaultService
	if it, ok := req.Item("settings", "service"); ok {
		var s string
		if it.Decode(&s) == nil && strings.HasPrefix(s, "https://") {
			service = strings.TrimRight(s, "/")
		}
	}
	query := "?city=" + url.QueryEscape(args.City)
	forecast := req.Capability == "weather.forecast"

	// The first run asks the host to fetch; the second reads the answer.
	if req.Round == 0 {
		if forecast {
			f := kit.Get("forecast", service+"/v1/forecast"+query)
			f.Connection = "weatherkey"
			return kit.Fetching(f), nil
		}
		return kit.Fetching(kit.Get("now", service+"/v1/current"+query)), nil
	}
	if forecast {
		resp, err := req.Answer("forecast")
		if err != nil {
			return nil, err
		}
		if resp.Status != 200 {
			return nil, fmt.Errorf("the weather service answered %d: %s", resp.Status, resp.Body)
		}
		var f struct {
			City string `json:"city"`
			Days []day  `json:"days"`
		}
		if err := resp.JSON(&f); err != nil {
			return nil, err
		}
		var parts []string
		for _, d := range f.Days {
			parts = append(parts, fmt.Sprintf("%s %.1f° %s", d.Day, d.Temperature, d.Sky))
		}
		return kit.Reply(fmt.Sprintf("%s: %s", f.City, strings.Join(parts, "; ")), map[string]any{"city": f.City, "days": f.Days}), nil
	}
	resp, err := req.Answer("now")
	if err != nil {
		return nil, err
	}
	if resp.Status != 200 {
		return nil, fmt.Errorf("the weather service answered %d: %s", resp.Status, resp.Body)
	}
	var now day
	if err := resp.JSON(&now); err != nil {
		return nil, err
	}
	return kit.Reply(fmt.Sprintf("%s: %.1f°, %s", now.City, now.Temperature, now.Sky),
		map[string]any{"city": now.City, "temperature": now.Temperature, "sky": now.Sky}), nil
}
