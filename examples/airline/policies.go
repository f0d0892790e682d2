package airline

import (
	"fmt"
	"sort"
	"strings"

	"github.com/groundgate/groundgate/airline"
	"github.com/groundgate/groundgate/policy"
)

// Policy is one policy of policies.json, in `groundgate policy put`'s
// format: SMT-LIB whose constants are derived in CEL from the call, the
// session's state, the host's facts and the clock.
type Policy = policy.Policy

// MaxSegments is how many flights of a call the route and schedule rules
// read one by one (f0 … f5): more is refused. τ-bench's trips have at most
// four.
const MaxSegments = 6

// The CEL pieces the policies share. A reservation or a user is read
// with read(TOOL, ARGUMENTS): the state's result of that call, or a
// refusal naming the call to make first.
const (
	celRes = `read("airline.get_reservation_details", {"reservation_id": arguments.reservation_id})`
	// celFree is policy.md's free checked bags per passenger.
	celFree = `{"regular": {"basic_economy": 0, "economy": 1, "business": 2}, "silver": {"basic_economy": 1, "economy": 2, "business": 3}, "gold": {"basic_economy": 2, "economy": 3, "business": 3}}`
)

// let binds name to value in body: CEL's cel.bind, so the value (a read
// of the state, a table) is evaluated once and body reads it by name.
func let(name, value, body string) string {
	return fmt.Sprintf("cel.bind(%s, %s, %s)", name, value, body)
}

// celCabin is the reservation res's cabin as the session left it:
// update_reservation_flights charges a cabin change but τ-bench's tool
// keeps the reservation's cabin as it was, so the cabin of the session's
// last admitted update_reservation_flights of this reservation counts.
func celCabin(res string) string {
	return fmt.Sprintf(`("latest" in state && "airline.update_reservation_flights" in state.latest && state.latest["airline.update_reservation_flights"].arguments.reservation_id == %s.reservation_id ? state.latest["airline.update_reservation_flights"].arguments.cabin : %s.cabin)`, res, res)
}

// celUserOf is the user of reservation res, read.
func celUserOf(res string) string {
	return fmt.Sprintf(`read("airline.get_user_details", {"user_id": %s.user_id})`, res)
}

// celFlightNo is flight number n ("HAT136") as the Int 136; 0 when it is
// no HAT number.
func celFlightNo(n string) string {
	return fmt.Sprintf(`(%s.matches("^HAT[0-9]{3}$") ? int(%s.substring(3)) : 0)`, n, n)
}

// celSegment is the i-th flight of list as the Int of its number, 0 past
// the end.
func celSegment(list string, i int) string {
	return fmt.Sprintf(`(size(%s) > %d ? %s : 0)`, list, i, celFlightNo(fmt.Sprintf("%s[%d].flight_number", list, i)))
}

// sameFlights is whether the call's flights are the reservation's (res),
// segment by segment: a list compared by index, not by a loop, whose
// worst case CEL's cost estimate bounds.
func sameFlights() string {
	parts := []string{fmt.Sprintf("size(arguments.flights) == size(res.flights) && size(res.flights) <= %d", MaxSegments)}
	for i := range MaxSegments {
		parts = append(parts, fmt.Sprintf("(size(res.flights) <= %d || (arguments.flights[%d].flight_number == res.flights[%d].flight_number && arguments.flights[%d].date == res.flights[%d].date))", i, i, i, i, i))
	}
	return strings.Join(parts, " && ")
}

// MaxPayments is how many payment methods of a booking the payment rules
// read one by one: policy.md allows five (one certificate, one credit
// card, three gift cards), so more is refused.
const MaxPayments = 5

// celPayments counts the booking's payment methods (the first
// MaxPayments) that pred accepts, p being one and u the user.
func celPayments(pred string) string {
	var parts []string
	for i := range MaxPayments {
		parts = append(parts, fmt.Sprintf("(size(arguments.payment_methods) > %d && %s ? 1 : 0)", i,
			strings.ReplaceAll(pred, "p.", fmt.Sprintf("arguments.payment_methods[%d].", i))))
	}
	return strings.Join(parts, " + ")
}

// Airports are the world's airports, in order: an airport is the Int of
// its place here (as Airport gives it), the same in CEL and SMT.
func Airports(w *airline.World) []string {
	set := map[string]bool{}
	for _, k := range w.Flights.Keys {
		set[w.Flights.M[k].Origin], set[w.Flights.M[k].Destination] = true, true
	}
	var out []string
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// celAirport is airport code x as an Int: its place in the airports'
// string, -1 when it is none of them.
func celAirport(airports []string, x string) string {
	s := strings.Join(airports, "")
	return fmt.Sprintf(`(size(%s) == 3 && "%s".indexOf(%s) %% 3 == 0 ? "%s".indexOf(%s) / 3 : -1)`, x, s, x, s, x)
}

// flightNumbers are the world's flights, which must be HAT001 … HATn.
func flightNumbers(w *airline.World) []string {
	for i, k := range w.Flights.Keys {
		if k != fmt.Sprintf("HAT%03d", i+1) {
			panic("examples/airline: flights are not HAT001 … HATn in order: " + k)
		}
	}
	return w.Flights.Keys
}

// smt is an SMT-LIB policy: helpers, the declared constants, one :named
// assertion per rule (=> allow RULE), and allow when every rule holds.
func smt(comment, helpers string, consts [][2]string, rules [][2]string) string {
	lastRules = rules
	var b strings.Builder
	for _, line := range strings.Split(comment, "\n") {
		b.WriteString("; " + line + "\n")
	}
	b.WriteString(helpers)
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
	airports := Airports(w)
	place := map[string]int{}
	for i, a := range airports {
		place[a] = i
	}
	var org, dst, dep []int
	for _, k := range flightNumbers(w) {
		f := w.Flights.M[k]
		org, dst = append(org, place[f.Origin]), append(dst, place[f.Destination])
		var h, m, s int
		if _, err := fmt.Sscanf(f.ScheduledDepartureTimeEST, "%d:%d:%d", &h, &m, &s); err != nil {
			panic(err)
		}
		dep = append(dep, h*3600+m*60+s)
	}
	segs := func(prefix string) [][2]string {
		var c [][2]string
		for i := range MaxSegments {
			c = append(c, [2]string{fmt.Sprintf("%s%d", prefix, i), "Int"})
		}
		return c
	}
	// The SMT side of segments: segment i reaches the destination.
	var reaches []string
	for i := range MaxSegments {
		reaches = append(reaches, fmt.Sprintf("(and (> n %d) (= t%d destination))", i, i))
	}

	// update_reservation_flights: basic economy, route and trip type, the
	// payment.
	// The timetable in CEL: two letters per flight (its airports' places,
	// A, B, …) and its departure as HHMM, looked up by the flight's number,
	// so that the solver compares Ints and the timetable costs a substring.
	var routes, times strings.Builder
	for i := range org {
		routes.WriteByte(byte('A' + org[i]))
		routes.WriteByte(byte('A' + dst[i]))
		fmt.Fprintf(&times, "%02d%02d", dep[i]/3600, dep[i]%3600/60)
	}
	if len(airports) > 26 {
		panic("examples/airline: more than 26 airports")
	}
	const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	nflights := len(org)
	// placeOf is the place of the airport at offset off (0: origin, 1:
	// destination) of the flight whose number's Int is k; -1 for no flight.
	placeOf := func(k string, off int) string {
		return fmt.Sprintf(`(%s >= 1 && %s <= %d ? "%s".indexOf(%q.substring(2 * %s - %d, 2 * %s - %d)) : -1)`,
			k, k, nflights, alpha, routes.String(), k, 2-off, k, 1-off)
	}
	consts := append([][2]string{{"n", "Int"}, {"last_destination", "Int"}, {"origin", "Int"}, {"destination", "Int"}, {"one_way", "Bool"},
		{"basic_economy", "Bool"}, {"same_flights", "Bool"}, {"payment_in_profile", "Bool"}, {"payment_by_card", "Bool"}}, append(segs("o"), segs("t")...)...)
	derive := map[string]string{
		"n":                  `size(arguments.flights)`,
		"last_destination":   `size(arguments.flights) > 0 ? ` + let("k", celFlightNo(`arguments.flights[size(arguments.flights) - 1].flight_number`), placeOf("k", 1)) + ` : -1`,
		"origin":             let("res", celRes, celAirport(airports, "res.origin")),
		"destination":        let("res", celRes, celAirport(airports, "res.destination")),
		"one_way":            let("res", celRes, `res.flight_type == "one_way"`),
		"basic_economy":      let("res", celRes, celCabin("res")+` == "basic_economy"`),
		"same_flights":       let("res", celRes, sameFlights()),
		"payment_in_profile": let("u", celUserOf(celRes), `arguments.payment_id in u.payment_methods`),
		"payment_by_card": let("u", celUserOf(celRes),
			`!(arguments.payment_id in u.payment_methods) || u.payment_methods[arguments.payment_id].source in ["gift_card", "credit_card"]`),
	}
	for i := range MaxSegments {
		derive[fmt.Sprintf("o%d", i)] = let("k", celSegment("arguments.flights", i), placeOf("k", 0))
		derive[fmt.Sprintf("t%d", i)] = let("k", celSegment("arguments.flights", i), placeOf("k", 1))
	}
	p["airline_change_flights"] = Policy{
		SMTLIB: smt("policy.md, Modify flight: change flights, change cabin, payment. Airports are the Ints of their places in\n"+
			strings.Join(airports, " ")+"; o_i and t_i are segment i's origin and destination by db/flights.json's timetable.",
			"", consts, [][2]string{
				{"basic_economy_flights_cannot_be_modified", "(=> basic_economy same_flights)"},
				{"flight_change_keeps_origin_destination_trip_type", fmt.Sprintf("(and (>= n 1) (<= n %d) (= o0 origin) "+
					"(ite one_way (= last_destination destination) (and (= last_destination origin) (or %s))))", MaxSegments, strings.Join(reaches, " "))},
				{"payment_methods_in_user_profile", "payment_in_profile"},
				{"flight_change_paid_by_gift_card_or_credit_card", "payment_by_card"},
			}),
		Derive:    derive,
		Allow:     "allow",
		AppliesTo: []string{"airline.update_reservation_flights"},
	}
	PolicyRules["airline_change_flights"] = lastRules

	// update_reservation_baggages: bags only added, the allowance, the
	// payment.
	p["airline_change_baggage"] = Policy{
		SMTLIB: smt("policy.md, Modify flight: change baggage; Book flight: checked bag allowance; payment.", "", [][2]string{
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
		SMTLIB: smt("policy.md, Modify flight: change passengers; Book flight: passengers.", "", [][2]string{
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

	// cancel_reservation. A segment is used once its scheduled departure
	// (its date's midnight EST, d_i seconds from now, plus the timetable's
	// departure, dep) is past.
	consts = [][2]string{{"n", "Int"}, {"seconds_since_booking", "Int"}, {"airline_cancelled", "Bool"}, {"business", "Bool"},
		{"insured", "Bool"}, {"health_or_weather", "Bool"}}
	derive = map[string]string{
		"n":                     let("res", celRes, `size(res.flights)`),
		"seconds_since_booking": let("res", celRes, `(now - timestamp(res.created_at + "-05:00")).getSeconds()`),
		"airline_cancelled":     `"cancel_reason" in facts && facts.cancel_reason == "airline_cancelled"`,
		"business":              let("res", celRes, celCabin("res")+` == "business"`),
		"insured":               let("res", celRes, `res.insurance == "yes"`),
		"health_or_weather":     `"cancel_reason" in facts && facts.cancel_reason in ["health", "weather"]`,
	}
	var used []string
	for i := range MaxSegments {
		// Segment i is used once its scheduled departure (its date, EST, at
		// the timetable's time) is not after now; a flight the timetable
		// does not know counts as used.
		u := fmt.Sprintf("used%d", i)
		consts = append(consts, [2]string{u, "Bool"})
		derive[u] = let("res", celRes, fmt.Sprintf(`size(res.flights) > %d && `, i)+let("k", celFlightNo(fmt.Sprintf("res.flights[%d].flight_number", i)),
			let("tt", fmt.Sprintf("%q", times.String()), fmt.Sprintf(`k < 1 || k > %d || timestamp(res.flights[%d].date + "T" + tt.substring(4 * k - 4, 4 * k - 2) + ":" + tt.substring(4 * k - 2, 4 * k) + ":00-05:00") <= now`,
				nflights, i))))
		used = append(used, u)
	}
	p["airline_cancel"] = Policy{
		SMTLIB: smt("policy.md, Cancel flight. Booked within 24 hours, the airline cancelled a flight, business, or insured\n"+
			"and cancelling for health or weather (policy.md's travel insurance); never a trip with a used segment\n"+
			"(used_i: segment i's scheduled departure, db/flights.json's, is past).",
			"", consts, [][2]string{
				{"cancel_within_24h_or_airline_cancelled_or_business_or_insured_for_health_or_weather",
					"(or (<= seconds_since_booking 86400) airline_cancelled business (and insured health_or_weather))"},
				{"cancel_only_unflown_trips", fmt.Sprintf("(and (<= n %d) (not (or %s)))", MaxSegments, strings.Join(used, " "))},
			}),
		Derive:    derive,
		Allow:     "allow",
		AppliesTo: []string{"airline.cancel_reservation"},
	}
	PolicyRules["airline_cancel"] = lastRules

	// book_reservation. A flight is bookable when search_direct_flight
	// lists it (only available flights are listed) for its route and date;
	// the route is the timetable's, as a string of two letters per flight
	// (A, B, … the airports' places).
	aps := strings.Join(airports, "")
	code := func(off string) string {
		return fmt.Sprintf(`"%s".substring(3 * "ABCDEFGHIJKLMNOPQRSTUVWXYZ".indexOf(rt.substring(%s, %s + 1)), 3 * "ABCDEFGHIJKLMNOPQRSTUVWXYZ".indexOf(rt.substring(%s, %s + 1)) + 3)`, aps, off, off, off, off)
	}
	celUser := `read("airline.get_user_details", {"user_id": arguments.user_id})`
	count := func(source string) string {
		return let("u", celUser, celPayments(fmt.Sprintf(`p.payment_id in u.payment_methods && u.payment_methods[p.payment_id].source == %q`, source)))
	}
	consts = [][2]string{{"n", "Int"}, {"passengers", "Int"}, {"payments", "Int"}, {"certificates", "Int"}, {"credit_cards", "Int"}, {"gift_cards", "Int"},
		{"in_profile", "Int"}, {"bags", "Int"}, {"nonfree_bags", "Int"}, {"free_bags", "Int"}}
	derive = map[string]string{
		"n":            `size(arguments.flights)`,
		"passengers":   `size(arguments.passengers)`,
		"certificates": count("certificate"),
		"credit_cards": count("credit_card"),
		"gift_cards":   count("gift_card"),
		"payments":     `size(arguments.payment_methods)`,
		"in_profile":   let("u", celUser, celPayments(`p.payment_id in u.payment_methods`)),
		"bags":         `int(arguments.total_baggages)`,
		"nonfree_bags": `int(arguments.nonfree_baggages)`,
		"free_bags":    let("u", celUser, celFree+`[u.membership][arguments.cabin] * size(arguments.passengers)`),
	}
	var avail []string
	for i := range MaxSegments {
		c := fmt.Sprintf("available%d", i)
		consts = append(consts, [2]string{c, "Bool"})
		f := fmt.Sprintf("arguments.flights[%d]", i)
		derive[c] = fmt.Sprintf(`size(arguments.flights) <= %d || `, i) + let("k", celFlightNo(f+".flight_number"),
			`k >= 1 && k <= `+fmt.Sprint(len(org))+` && `+let("rt", fmt.Sprintf("%q", routes.String()),
				fmt.Sprintf(`read("airline.search_direct_flight", {"origin": %s, "destination": %s, "date": %s.date}).exists(x, x.flight_number == %s.flight_number)`,
					code("2 * k - 2"), code("2 * k - 1"), f, f)))
		avail = append(avail, c)
	}
	p["airline_book"] = Policy{
		SMTLIB: smt("policy.md, Book flight: flights, passengers, payment, checked bags.", "", consts, [][2]string{
			{"book_only_available_flights", fmt.Sprintf("(and (>= n 1) (<= n %d) %s)", MaxSegments, strings.Join(avail, " "))},
			{"at_most_five_passengers", "(<= passengers 5)"},
			{"payment_at_most_one_certificate_one_card_three_gift_cards", fmt.Sprintf("(and (<= payments %d) (<= certificates 1) (<= credit_cards 1) (<= gift_cards 3))", MaxPayments)},
			{"payment_methods_in_user_profile", fmt.Sprintf("(= in_profile (ite (< payments %d) payments %d))", MaxPayments, MaxPayments)},
			{"nonfree_bags_follow_the_allowance", "(= nonfree_bags (ite (> bags free_bags) (- bags free_bags) 0))"},
		}),
		Derive:    derive,
		Allow:     "allow",
		AppliesTo: []string{"airline.book_reservation"},
	}
	PolicyRules["airline_book"] = lastRules

	// send_certificate: the reservation the complaint is about is the one
	// the session read last (the agent confirming the facts), when it is
	// the user's.
	celMine := `("latest" in state && "airline.get_reservation_details" in state.latest && state.latest["airline.get_reservation_details"].result.user_id == arguments.user_id ? [state.latest["airline.get_reservation_details"].result] : [])`
	celKind := `("complaint" in facts && facts.complaint in ["cancelled", "delayed"] ? facts.complaint : "none")`
	// A flight can have been delayed only on its day, cancelled only on or
	// before it: no tool reads a flight's status, so that is what the
	// state confirms of the complaint.
	hit := `r.flights.exists(f, kind == "delayed" ? (timestamp(f.date + "T00:00:00-05:00") <= now && now < timestamp(f.date + "T00:00:00-05:00") + duration("24h")) : ` +
		`(kind == "cancelled" && timestamp(f.date + "T00:00:00-05:00") <= now))`
	changed := `((has(r.status) && r.status == "cancelled") || ("airline.update_reservation_flights" in state.latest && state.latest["airline.update_reservation_flights"].arguments.reservation_id == r.reservation_id))`
	p["airline_certificate"] = Policy{
		SMTLIB: smt("policy.md, Refund: certificates as a gesture, for a cancelled or delayed flight the user complains of.", "", [][2]string{
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
	for name, pol := range p {
		pol.Bind = map[string]string{}
		p[name] = pol
	}
	return p
}
