package airline

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/hashing"
)

// toolsJSON is τ-bench's function specs of the 14 tools (tools.json of
// shared/data/tau-airline, MIT, © 2024 Sierra: LICENSE.tau-bench).
//
//go:embed tools.json
var toolsJSON []byte

// Spec is one tool as τ-bench's get_info() describes it.
type Spec struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  jsontext.Value `json:"parameters"`
}

// Specs are the 14 tools' specs, in tools.json's order.
func Specs() ([]Spec, error) {
	var specs []Spec
	if err := hashing.DecodeStrict(toolsJSON, &specs); err != nil {
		return nil, fmt.Errorf("airline: tools.json: %w", err)
	}
	return specs, nil
}

// Writes are the tools that change the world.
var Writes = map[string]bool{
	"book_reservation":              true,
	"cancel_reservation":            true,
	"update_reservation_flights":    true,
	"update_reservation_baggages":   true,
	"update_reservation_passengers": true,
	"send_certificate":              true,
}

// signature is a tool's Python class and its parameters in order (all
// required), for τ-bench's errors about arguments.
type signature struct {
	class  string
	params []string
}

var signatures = map[string]signature{
	"book_reservation":              {"BookReservation", []string{"user_id", "origin", "destination", "flight_type", "cabin", "flights", "passengers", "payment_methods", "total_baggages", "nonfree_baggages", "insurance"}},
	"calculate":                     {"Calculate", []string{"expression"}},
	"cancel_reservation":            {"CancelReservation", []string{"reservation_id"}},
	"get_reservation_details":       {"GetReservationDetails", []string{"reservation_id"}},
	"get_user_details":              {"GetUserDetails", []string{"user_id"}},
	"list_all_airports":             {"ListAllAirports", nil},
	"search_direct_flight":          {"SearchDirectFlight", []string{"origin", "destination", "date"}},
	"search_onestop_flight":         {"SearchOnestopFlight", []string{"origin", "destination", "date"}},
	"send_certificate":              {"SendCertificate", []string{"user_id", "amount"}},
	"think":                         {"Think", []string{"thought"}},
	"transfer_to_human_agents":      {"TransferToHumanAgents", []string{"summary"}},
	"update_reservation_baggages":   {"UpdateReservationBaggages", []string{"reservation_id", "total_baggages", "nonfree_baggages", "payment_id"}},
	"update_reservation_flights":    {"UpdateReservationFlights", []string{"reservation_id", "cabin", "flights", "payment_id"}},
	"update_reservation_passengers": {"UpdateReservationPassengers", []string{"reservation_id", "passengers"}},
}

// IsError is whether a tool's answer is one of τ-bench's errors (they
// are answers, not exceptions, in τ-bench: "Error: …").
func IsError(out string) bool { return strings.HasPrefix(out, "Error: ") }

// Call runs the tool name with its JSON arguments (an object; empty is
// {}) on w and answers as τ-bench does: the tool's string, JSON for most,
// "Error: …" for its errors. Arguments are decoded strictly: a member the
// tool does not take is τ-bench's "unexpected keyword argument", a
// missing one its "missing … required positional argument", a value of
// the wrong shape an error naming it (where τ-bench would fail later, or
// not at all).
func (w *World) Call(name string, args []byte) string {
	sig, ok := signatures[name]
	if !ok {
		return fmt.Sprintf("Unknown action %s", name)
	}
	if len(strings.TrimSpace(string(args))) == 0 || strings.TrimSpace(string(args)) == "null" {
		args = []byte("{}")
	}
	var in *Ordered[jsontext.Value]
	if err := hashing.DecodeStrict(args, &in); err != nil {
		return "Error: arguments: " + err.Error()
	}
	for _, k := range in.Keys {
		known := false
		for _, p := range sig.params {
			known = known || p == k
		}
		if !known {
			return fmt.Sprintf("Error: %s.invoke() got an unexpected keyword argument %s", sig.class, pyRepr(k))
		}
	}
	var missing []string
	for _, p := range sig.params {
		if _, ok := in.Get(p); !ok {
			missing = append(missing, pyRepr(p))
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("Error: %s.invoke() missing %d required positional argument%s: %s",
			sig.class, len(missing), plural(len(missing)), pyList(missing))
	}
	dec := func(v any) string {
		if err := hashing.DecodePart(args, v); err != nil {
			return "Error: arguments: " + err.Error()
		}
		return ""
	}
	switch name {
	case "book_reservation":
		var a Booking
		if msg := dec(&a); msg != "" {
			return msg
		}
		return w.BookReservation(a)
	case "calculate":
		var a struct {
			Expression string `json:"expression"`
		}
		if msg := dec(&a); msg != "" {
			return msg
		}
		return w.Calculate(a.Expression)
	case "cancel_reservation", "get_reservation_details":
		var a struct {
			ReservationID string `json:"reservation_id"`
		}
		if msg := dec(&a); msg != "" {
			return msg
		}
		if name == "cancel_reservation" {
			return w.CancelReservation(a.ReservationID)
		}
		return w.GetReservationDetails(a.ReservationID)
	case "get_user_details":
		var a struct {
			UserID string `json:"user_id"`
		}
		if msg := dec(&a); msg != "" {
			return msg
		}
		return w.GetUserDetails(a.UserID)
	case "list_all_airports":
		return w.ListAllAirports()
	case "search_direct_flight", "search_onestop_flight":
		var a struct {
			Origin      string `json:"origin"`
			Destination string `json:"destination"`
			Date        string `json:"date"`
		}
		if msg := dec(&a); msg != "" {
			return msg
		}
		if name == "search_direct_flight" {
			return w.SearchDirectFlight(a.Origin, a.Destination, a.Date)
		}
		return w.SearchOnestopFlight(a.Origin, a.Destination, a.Date)
	case "send_certificate":
		var a struct {
			UserID string `json:"user_id"`
			Amount Num    `json:"amount"`
		}
		if msg := dec(&a); msg != "" {
			return msg
		}
		return w.SendCertificate(a.UserID, a.Amount)
	case "think":
		var a struct {
			Thought string `json:"thought"`
		}
		if msg := dec(&a); msg != "" {
			return msg
		}
		return w.Think(a.Thought)
	case "transfer_to_human_agents":
		var a struct {
			Summary string `json:"summary"`
		}
		if msg := dec(&a); msg != "" {
			return msg
		}
		return w.TransferToHumanAgents(a.Summary)
	case "update_reservation_baggages":
		var a struct {
			ReservationID   string `json:"reservation_id"`
			TotalBaggages   int64  `json:"total_baggages"`
			NonfreeBaggages int64  `json:"nonfree_baggages"`
			PaymentID       string `json:"payment_id"`
		}
		if msg := dec(&a); msg != "" {
			return msg
		}
		return w.UpdateReservationBaggages(a.ReservationID, a.TotalBaggages, a.NonfreeBaggages, a.PaymentID)
	case "update_reservation_flights":
		var a struct {
			ReservationID string      `json:"reservation_id"`
			Cabin         string      `json:"cabin"`
			Flights       []FlightRef `json:"flights"`
			PaymentID     string      `json:"payment_id"`
		}
		if msg := dec(&a); msg != "" {
			return msg
		}
		return w.UpdateReservationFlights(a.ReservationID, a.Cabin, a.Flights, a.PaymentID)
	case "update_reservation_passengers":
		var a struct {
			ReservationID string      `json:"reservation_id"`
			Passengers    []Passenger `json:"passengers"`
		}
		if msg := dec(&a); msg != "" {
			return msg
		}
		if a.Passengers == nil {
			a.Passengers = []Passenger{}
		}
		return w.UpdateReservationPassengers(a.ReservationID, a.Passengers)
	}
	return fmt.Sprintf("Unknown action %s", name)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// pyList is CPython's list of missing arguments: 'a', 'a' and 'b',
// 'a', 'b', and 'c'.
func pyList(xs []string) string {
	switch len(xs) {
	case 1:
		return xs[0]
	case 2:
		return xs[0] + " and " + xs[1]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + ", and " + xs[len(xs)-1]
}
