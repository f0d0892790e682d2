package airline

import (
	"fmt"
	"strings"

	"github.com/groundgate/groundgate/airline"
)

// Policy is one policy of policies.json, in `groundgate policy put`'s
// format: SMT-LIB whose constants are derived in CEL from the call, the
// session's state, the host's facts and the clock.
type Policy struct {
	SMTLIB    string            `json:"smtlib"`
	Derive    map[string]string `json:"derive"`
	Allow     string            `json:"allow"`
	AppliesTo []string          `json:"applies_to"`
}

// The CEL pieces the policies share. A reservation, a user or a flight's
// status is read with read(TOOL, ARGUMENTS): the state's result of that
// call, or a refusal naming the call to make first.
const (
	celRes = `read("airline.get_reservation_details", {"reservation_id": arguments.reservation_id})`
	// celFree is policy.md's free checked bags per passenger.
	celFree = `{"regular": {"basic_economy": 0, "economy": 1, "business": 2}, "silver": {"basic_economy": 1, "economy": 2, "business": 3}, "gold": {"basic_economy": 2, "economy": 3, "business": 3}}`
)

// let binds name to value in body: CEL's `[value].map(name, body)[0]`,
// body with name bound. Standard CEL, no extension needed.
func let(name, value, body string) string {
	return fmt.Sprintf("[%s].map(%s, %s)[0]", value, name, body)
}

// celCabin is the reservation res's cabin as the session left it:
// update_reservation_flights charges a cabin change but τ-bench's tool
// keeps the reservation's cabin as it was, so the cabin of the session's
// last admitted update_reservation_flights of this reservation counts.
func celCabin(res string) string {
	return fmt.Sprintf(`(("latest" in state) && ("airline.update_reservation_flights" in state.latest) && state.latest["airline.update_reservation_flights"].arguments.reservation_id == %s.reservation_id ? state.latest["airline.update_reservation_flights"].arguments.cabin : %s.cabin)`, res, res)
}

// celUserOf is the user of reservation res, read.
func celUserOf(res string) string {
	return fmt.Sprintf(`read("airline.get_user_details", {"user_id": %s.user_id})`, res)
}

// Timetable is the CEL map of every flight's route and time, flight
// number → [origin, destination, scheduled departure (EST)], from
// db/flights.json: no tool reads a flight by its number, and a flight's
// route and schedule do not change from day to day.
func Timetable(w *airline.World) string {
	var b strings.Builder
	b.WriteString("{")
	for i, k := range w.Flights.Keys {
		f := w.Flights.M[k]
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: [%q, %q, %q]", k, f.Origin, f.Destination, f.ScheduledDepartureTimeEST)
	}
	b.WriteString("}")
	return b.String()
}

// smt is an SMT-LIB policy: the declared constants, one :named assertion
// per rule (=> allow RULE), and allow when every rule holds.
func smt(comment string, consts [][2]string, rules [][2]string) string {
	lastRules = rules
	var b strings.Builder
	for _, line := range strings.Split(comment, "\n") {
		b.WriteString("; " + line + "\n")
	}
	for _, c := range consts {
		fmt.Fprintf(&b, "(declare-const %s %s)\n", c[0], c[1])
	}
	b.WriteString("(declare-const allow Bool)\n")
	var all []string
	for _, r := range rules {
		fmt.Fprintf(&b, "(assert (! (=> allow %s) :named %s))\n", r[1], r[0])
		all = append(all, r[1])
	}
	fmt.Fprintf(&b, "(assert (=> (and %s) allow))\n", strings.Join(all, " "))
	return b.String()
}

// lastRules are the rules smt was last given (Policies files them under
// their policy's name in PolicyRules).
var lastRules [][2]string

// PolicyRules are each policy's named rules, name and SMT term, as
// Policies last made them.
var PolicyRules = map[string][][2]string{}

// Policies are policy.md's rules about the six writes as groundgate
// policies, one per write tool; each rule a :named assertion named after
// its sentence (Rules).
func Policies(w *airline.World) map[string]Policy {
	p := map[string]Policy{}

	// update_reservation_flights: basic economy, route and trip type, the
	// payment.
	flightsOf := `arguments.flights.map(f, f.flight_number in tt ? tt[f.flight_number] : ["", "", ""])`
	p["airline_change_flights"] = Policy{
		SMTLIB: smt("policy.md, Modify flight: change flights, change cabin, payment.", [][2]string{
			{"basic_economy_flights_kept", "Bool"}, {"origin_destination_trip_type_kept", "Bool"},
			{"payment_in_profile", "Bool"}, {"payment_by_card", "Bool"},
		}, [][2]string{
			{"basic_economy_flights_cannot_be_modified", "basic_economy_flights_kept"},
			{"flight_change_keeps_origin_destination_trip_type", "origin_destination_trip_type_kept"},
			{"payment_methods_in_user_profile", "payment_in_profile"},
			{"flight_change_paid_by_gift_card_or_credit_card", "payment_by_card"},
		}),
		Derive: map[string]string{
			"basic_economy_flights_kept": let("res", celRes,
				celCabin("res")+` != "basic_economy" || (size(arguments.flights) == size(res.flights) && arguments.flights.all(f, res.flights.exists(g, g.flight_number == f.flight_number && g.date == f.date)))`),
			"origin_destination_trip_type_kept": let("res", celRes, let("tt", Timetable(w), let("r", flightsOf,
				`size(r) > 0 && r[0][0] == res.origin && (res.flight_type == "one_way" ? r[size(r) - 1][1] == res.destination : (r[size(r) - 1][1] == res.origin && r.exists(x, x[1] == res.destination)))`))),
			"payment_in_profile": let("u", celUserOf(celRes), `arguments.payment_id in u.payment_methods`),
			"payment_by_card": let("u", celUserOf(celRes),
				`arguments.payment_id in u.payment_methods && u.payment_methods[arguments.payment_id].source in ["gift_card", "credit_card"]`),
		},
		Allow:     "allow",
		AppliesTo: []string{"airline.update_reservation_flights"},
	}
	PolicyRules["airline_change_flights"] = lastRules

	// update_reservation_baggages: bags only added, the allowance, the
	// payment.
	p["airline_change_baggage"] = Policy{
		SMTLIB: smt("policy.md, Modify flight: change baggage; Book flight: checked bag allowance; payment.", [][2]string{
			{"bags_before", "Int"}, {"bags", "Int"}, {"nonfree_bags", "Int"}, {"free_bags", "Int"}, {"payment_in_profile", "Bool"},
		}, [][2]string{
			{"bags_added_never_removed", "(>= bags bags_before)"},
			{"nonfree_bags_follow_the_allowance", "(= nonfree_bags (ite (> bags free_bags) (- bags free_bags) 0))"},
			{"payment_methods_in_user_profile", "payment_in_profile"},
		}),
		Derive: map[string]string{
			"bags_before":        let("res", celRes, `int(res.total_baggages)`),
			"bags":               `int(arguments.total_baggages)`,
			"nonfree_bags":       `int(arguments.nonfree_baggages)`,
			"free_bags":          let("res", celRes, let("u", celUserOf("res"), celFree+`[u.membership][`+celCabin("res")+`] * size(res.passengers)`)),
			"payment_in_profile": let("u", celUserOf(celRes), `arguments.payment_id in u.payment_methods`),
		},
		Allow:     "allow",
		AppliesTo: []string{"airline.update_reservation_baggages"},
	}
	PolicyRules["airline_change_baggage"] = lastRules

	// update_reservation_passengers.
	p["airline_change_passengers"] = Policy{
		SMTLIB: smt("policy.md, Modify flight: change passengers; Book flight: passengers.", [][2]string{
			{"passengers_before", "Int"}, {"passengers", "Int"},
		}, [][2]string{
			{"passenger_count_is_fixed", "(= passengers passengers_before)"},
			{"at_most_five_passengers", "(<= passengers 5)"},
		}),
		Derive: map[string]string{
			"passengers_before": let("res", celRes, `size(res.passengers)`),
			"passengers":        `size(arguments.passengers)`,
		},
		Allow:     "allow",
		AppliesTo: []string{"airline.update_reservation_passengers"},
	}
	PolicyRules["airline_change_passengers"] = lastRules

	// cancel_reservation.
	p["airline_cancel"] = Policy{
		SMTLIB: smt("policy.md, Cancel flight. Booked within 24 hours, the airline cancelled a flight, business, or insured\n"+
			"and cancelling for health or weather (policy.md's travel insurance); never a trip with a used segment.", [][2]string{
			{"seconds_since_booking", "Int"}, {"airline_cancelled", "Bool"}, {"business", "Bool"},
			{"insured", "Bool"}, {"health_or_weather", "Bool"}, {"segment_used", "Bool"},
		}, [][2]string{
			{"cancel_within_24h_or_airline_cancelled_or_business_or_insured_for_health_or_weather",
				"(or (<= seconds_since_booking 86400) airline_cancelled business (and insured health_or_weather))"},
			{"cancel_only_unflown_trips", "(not segment_used)"},
		}),
		Derive: map[string]string{
			"seconds_since_booking": let("res", celRes, `(now - timestamp(res.created_at + "-05:00")).getSeconds()`),
			"airline_cancelled":     `"cancel_reason" in facts && facts.cancel_reason == "airline_cancelled"`,
			"business":              let("res", celRes, celCabin("res")+` == "business"`),
			"insured":               let("res", celRes, `res.insurance == "yes"`),
			"health_or_weather":     `"cancel_reason" in facts && facts.cancel_reason in ["health", "weather"]`,
			"segment_used": let("res", celRes, let("tt", Timetable(w),
				`res.flights.exists(f, !(f.flight_number in tt) || timestamp(f.date + "T" + tt[f.flight_number][2] + "-05:00") <= now)`)),
		},
		Allow:     "allow",
		AppliesTo: []string{"airline.cancel_reservation"},
	}
	PolicyRules["airline_cancel"] = lastRules

	// book_reservation.
	celUser := `read("airline.get_user_details", {"user_id": arguments.user_id})`
	count := func(source string) string {
		return let("u", celUser, fmt.Sprintf(`size(arguments.payment_methods.filter(p, p.payment_id in u.payment_methods && u.payment_methods[p.payment_id].source == %q))`, source))
	}
	p["airline_book"] = Policy{
		SMTLIB: smt("policy.md, Book flight: flights, passengers, payment, checked bags.", [][2]string{
			{"flights_available", "Bool"}, {"passengers", "Int"}, {"certificates", "Int"}, {"credit_cards", "Int"}, {"gift_cards", "Int"},
			{"payment_in_profile", "Bool"}, {"bags", "Int"}, {"nonfree_bags", "Int"}, {"free_bags", "Int"},
		}, [][2]string{
			{"book_only_available_flights", "flights_available"},
			{"at_most_five_passengers", "(<= passengers 5)"},
			{"payment_at_most_one_certificate_one_card_three_gift_cards", "(and (<= certificates 1) (<= credit_cards 1) (<= gift_cards 3))"},
			{"payment_methods_in_user_profile", "payment_in_profile"},
			{"nonfree_bags_follow_the_allowance", "(= nonfree_bags (ite (> bags free_bags) (- bags free_bags) 0))"},
		}),
		Derive: map[string]string{
			"flights_available": let("tt", Timetable(w), `arguments.flights.all(f, f.flight_number in tt && `+
				`read("airline.search_direct_flight", {"origin": tt[f.flight_number][0], "destination": tt[f.flight_number][1], "date": f.date})`+
				`.exists(x, x.flight_number == f.flight_number))`),
			"passengers":         `size(arguments.passengers)`,
			"certificates":       count("certificate"),
			"credit_cards":       count("credit_card"),
			"gift_cards":         count("gift_card"),
			"payment_in_profile": let("u", celUser, `arguments.payment_methods.all(p, p.payment_id in u.payment_methods)`),
			"bags":               `int(arguments.total_baggages)`,
			"nonfree_bags":       `int(arguments.nonfree_baggages)`,
			"free_bags":          let("u", celUser, celFree+`[u.membership][arguments.cabin] * size(arguments.passengers)`),
		},
		Allow:     "allow",
		AppliesTo: []string{"airline.book_reservation"},
	}
	PolicyRules["airline_book"] = lastRules

	// send_certificate: the user's reservations the session has read.
	celMine := `(("results" in state) && ("airline.get_reservation_details" in state.results) ? ` +
		`state.results["airline.get_reservation_details"].filter(k, state.results["airline.get_reservation_details"][k].user_id == arguments.user_id)` +
		`.map(k, state.results["airline.get_reservation_details"][k]) : [])`
	celKind := `("complaint" in facts && facts.complaint == "cancelled" ? "cancelled" : ("complaint" in facts && facts.complaint == "delayed" ? "delayed" : "none"))`
	// A flight can have been delayed only on its day, cancelled only on
	// or before it: no tool reads a flight's status, so that is what the
	// state confirms of the complaint.
	hit := `r.flights.exists(f, kind == "delayed" ? (timestamp(f.date + "T00:00:00-05:00") <= now && now < timestamp(f.date + "T00:00:00-05:00") + duration("24h")) : ` +
		`(kind == "cancelled" && timestamp(f.date + "T00:00:00-05:00") <= now))`
	changed := `((("status" in r) && r.status == "cancelled") || (("results" in state) && ("airline.update_reservation_flights" in state.results) && ` +
		`state.results["airline.update_reservation_flights"].exists(k, k.endsWith("&reservation_id=" + r.reservation_id))))`
	p["airline_certificate"] = Policy{
		SMTLIB: smt("policy.md, Refund: certificates as a gesture, for a cancelled or delayed flight the user complains of.", [][2]string{
			{"eligible", "Bool"}, {"confirmed", "Bool"}, {"amount_per_passenger", "Bool"}, {"changed_or_cancelled_if_delayed", "Bool"}, {"asked", "Bool"},
		}, [][2]string{
			{"certificate_only_for_members_insured_or_business", "eligible"},
			{"certificate_only_for_a_confirmed_cancelled_or_delayed_flight", "confirmed"},
			{"certificate_amount_100_or_50_per_passenger", "amount_per_passenger"},
			{"delay_certificate_only_after_change_or_cancel", "changed_or_cancelled_if_delayed"},
			{"certificate_only_when_user_asks", "asked"},
		}),
		Derive: map[string]string{
			"eligible": let("u", celUser, let("mine", celMine,
				`u.membership in ["silver", "gold"] || mine.exists(r, r.insurance == "yes" || r.cabin == "business")`)),
			"confirmed": let("kind", celKind, let("mine", celMine, `mine.exists(r, `+hit+`)`)),
			"amount_per_passenger": let("kind", celKind, let("mine", celMine,
				`mine.exists(r, `+hit+` && double(arguments.amount) == (kind == "cancelled" ? 100.0 : 50.0) * double(size(r.passengers)))`)),
			"changed_or_cancelled_if_delayed": let("kind", celKind, let("mine", celMine,
				`kind != "delayed" || mine.exists(r, `+hit+` && `+changed+`)`)),
			"asked": `"asked_for_compensation" in facts && facts.asked_for_compensation == true`,
		},
		Allow:     "allow",
		AppliesTo: []string{"airline.send_certificate"},
	}
	PolicyRules["airline_certificate"] = lastRules
	return p
}
