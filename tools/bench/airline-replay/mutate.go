package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/groundgate/groundgate/airline"
	ex "github.com/groundgate/groundgate/examples/airline"
)

// mutation is a gold write changed so that it breaks one rule.
type mutation struct {
	name  string
	rule  string
	args  map[string]any
	facts map[string]any
}

const today = "2024-05-15"

// clone copies a JSON value.
func clone[T any](v T) T {
	b, _ := json.Marshal(v)
	var out T
	_ = json.Unmarshal(b, &out)
	return out
}

func nextDay(date string) string {
	t, err := time.Parse("2006-01-02", date)
	if err != nil {
		return date
	}
	if date >= "2024-05-30" {
		return t.AddDate(0, 0, -1).Format("2006-01-02")
	}
	return t.AddDate(0, 0, 1).Format("2006-01-02")
}

// mutations are the mutations of task t's write k, over world w as the
// task's earlier gold actions left it.
func mutations(w *airline.World, t ex.Task, k int, facts map[string]any) []mutation {
	a := t.Actions[k]
	var args map[string]any
	_ = json.Unmarshal(a.Arguments, &args)
	str := func(k string) string { s, _ := args[k].(string); return s }
	var res *airline.Reservation
	var user *airline.User
	if id := str("reservation_id"); id != "" {
		res, _ = w.Reservations.Get(id)
		if res != nil {
			user, _ = w.Users.Get(res.UserID)
		}
	} else {
		user, _ = w.Users.Get(str("user_id"))
	}
	if user == nil {
		return nil
	}
	// The cabin as the session left it: the last earlier gold cabin change.
	cabin := ""
	if res != nil {
		cabin = res.Cabin
		for _, b := range t.Actions[:k] {
			var x map[string]any
			_ = json.Unmarshal(b.Arguments, &x)
			if b.Name == "update_reservation_flights" && x["reservation_id"] == res.ReservationID {
				cabin, _ = x["cabin"].(string)
			}
		}
	}
	ofSource := func(source string) []string {
		var ids []string
		for _, id := range user.PaymentMethods.Keys {
			if user.PaymentMethods.M[id].Source == source {
				ids = append(ids, id)
			}
		}
		return ids
	}
	var ms []mutation
	add := func(name, rule string, m map[string]any) {
		ms = append(ms, mutation{name: name, rule: rule, args: m, facts: facts})
	}
	switch a.Name {
	case "update_reservation_flights":
		fl, _ := args["flights"].([]any)
		if cabin == "basic_economy" && len(fl) > 0 {
			m := clone(args)
			f := m["flights"].([]any)[0].(map[string]any)
			f["date"] = nextDay(f["date"].(string))
			add("a basic economy flight moved a day", "basic_economy_flights_cannot_be_modified", m)
		}
		if len(fl) > 0 && res != nil {
			m := clone(args)
			f := m["flights"].([]any)[0].(map[string]any)
			for _, num := range w.Flights.Keys {
				if w.Flights.M[num].Origin != res.Origin {
					f["flight_number"] = num
					break
				}
			}
			add("the first flight from another origin", "flight_change_keeps_origin_destination_trip_type", m)
		}
		m := clone(args)
		m["payment_id"] = "credit_card_0000000"
		add("a payment id not in the profile", "payment_methods_in_user_profile", m)
		if certs := ofSource("certificate"); len(certs) > 0 {
			m := clone(args)
			m["payment_id"] = certs[0]
			add("paid by a certificate", "flight_change_paid_by_gift_card_or_credit_card", m)
		}
	case "update_reservation_baggages":
		if res != nil && res.TotalBaggages > 0 {
			m := clone(args)
			total := res.TotalBaggages - 1
			free := ex.Free[user.Membership][cabin] * int64(len(res.Passengers))
			m["total_baggages"] = total
			m["nonfree_baggages"] = max(0, total-free)
			add("a checked bag removed", "bags_added_never_removed", m)
		}
		m := clone(args)
		n, _ := m["nonfree_baggages"].(float64)
		m["nonfree_baggages"] = n + 1
		add("one more bag charged", "nonfree_bags_follow_the_allowance", m)
		m = clone(args)
		m["payment_id"] = "gift_card_0000000"
		add("a payment id not in the profile", "payment_methods_in_user_profile", m)
	case "update_reservation_passengers":
		ps, _ := args["passengers"].([]any)
		m := clone(args)
		m["passengers"] = append(clone(ps), map[string]any{"first_name": "Extra", "last_name": "Traveller", "dob": "1990-01-01"})
		add("a passenger added", "passenger_count_is_fixed", m)
		if len(ps) >= 2 {
			m := clone(args)
			m["passengers"] = clone(ps)[:len(ps)-1]
			add("a passenger removed", "passenger_count_is_fixed", m)
		}
		six := clone(ps)
		for len(six) < 6 {
			six = append(six, map[string]any{"first_name": fmt.Sprintf("Extra%d", len(six)), "last_name": "Traveller", "dob": "1990-01-01"})
		}
		m = clone(args)
		m["passengers"] = six
		add("six passengers", "at_most_five_passengers", m)
	case "cancel_reservation":
		if id := pick(w, user, func(r *airline.Reservation) bool {
			return r.Cabin != "business" && r.Insurance == "no" && createdBefore(r, 48*time.Hour) && future(r)
		}); id != "" {
			add("an uninsured economy reservation booked over 48 h earlier", "cancel_within_24h_or_airline_cancelled_or_business_or_insured_for_health_or_weather", map[string]any{"reservation_id": id})
		}
		if id := pick(w, user, func(r *airline.Reservation) bool {
			return r.Cabin == "business" && r.Status == nil && len(r.Flights) > 0 && r.Flights[0].Date < today
		}); id != "" {
			add("a business reservation with a flown segment", "cancel_only_unflown_trips", map[string]any{"reservation_id": id})
		}
		if reason, _ := facts["cancel_reason"].(string); (reason == "health" || reason == "weather") && res != nil && res.Cabin != "business" && createdBefore(res, 24*time.Hour) {
			f := clone(facts)
			f["cancel_reason"] = "change_of_plan"
			ms = append(ms, mutation{name: "the reason a change of plan", rule: "cancel_within_24h_or_airline_cancelled_or_business_or_insured_for_health_or_weather", args: clone(args), facts: f})
		}
	case "book_reservation":
		ps, _ := args["passengers"].([]any)
		six := clone(ps)
		for len(six) < 6 {
			six = append(six, map[string]any{"first_name": fmt.Sprintf("Extra%d", len(six)), "last_name": "Traveller", "dob": "1990-01-01"})
		}
		m := clone(args)
		m["passengers"] = six
		add("six passengers", "at_most_five_passengers", m)
		pays, _ := args["payment_methods"].([]any)
		used := map[string]bool{}
		for _, p := range pays {
			used[p.(map[string]any)["payment_id"].(string)] = true
		}
		extra := func(name string, ids []string, want int) {
			m := clone(args)
			ps := m["payment_methods"].([]any)
			have := 0
			for _, p := range ps {
				if contains(ids, p.(map[string]any)["payment_id"].(string)) {
					have++
				}
			}
			for _, id := range ids {
				if have >= want {
					break
				}
				if !used[id] {
					ps = append(ps, map[string]any{"payment_id": id, "amount": 1})
					have++
				}
			}
			if have < want {
				return
			}
			first := ps[0].(map[string]any)
			first["amount"] = first["amount"].(float64) - float64(len(ps)-len(pays))
			m["payment_methods"] = ps
			add(name, "payment_at_most_one_certificate_one_card_three_gift_cards", m)
		}
		extra("two certificates", ofSource("certificate"), 2)
		extra("two credit cards", ofSource("credit_card"), 2)
		extra("four gift cards", ofSource("gift_card"), 4)
		m = clone(args)
		ps2 := m["payment_methods"].([]any)
		first := ps2[0].(map[string]any)
		first["amount"] = first["amount"].(float64) - 1
		m["payment_methods"] = append(ps2, map[string]any{"payment_id": "gift_card_0000000", "amount": 1})
		add("a payment id not in the profile", "payment_methods_in_user_profile", m)
		m = clone(args)
		n, _ := m["nonfree_baggages"].(float64)
		m["nonfree_baggages"] = n + 1
		add("one more bag charged", "nonfree_bags_follow_the_allowance", m)
		m = clone(args)
		m["flights"].([]any)[0].(map[string]any)["date"] = "2024-05-10"
		add("a flight that has landed", "book_only_available_flights", m)
	case "send_certificate":
		m := clone(args)
		n, _ := m["amount"].(float64)
		m["amount"] = 2 * n
		add("twice the amount", "certificate_amount_100_or_50_per_passenger", m)
		f := clone(facts)
		if f == nil {
			f = map[string]any{}
		}
		f["asked_for_compensation"] = false
		ms = append(ms, mutation{name: "compensation not asked for", rule: "certificate_only_when_user_asks", args: clone(args), facts: f})
	}
	return ms
}

func createdBefore(r *airline.Reservation, d time.Duration) bool {
	t, err := time.Parse("2006-01-02T15:04:05-07:00", r.CreatedAt+"-05:00")
	return err == nil && ex.Now.Sub(t) > d
}

func future(r *airline.Reservation) bool {
	if r.Status != nil || len(r.Flights) == 0 {
		return false
	}
	for _, f := range r.Flights {
		if f.Date <= today {
			return false
		}
	}
	return true
}

// pick is a reservation of the user that ok accepts, else the first of
// the world's.
func pick(w *airline.World, u *airline.User, ok func(*airline.Reservation) bool) string {
	for _, id := range u.Reservations {
		if r, found := w.Reservations.Get(id); found && ok(r) {
			return id
		}
	}
	for _, id := range w.Reservations.Keys {
		if ok(w.Reservations.M[id]) {
			return id
		}
	}
	return ""
}

// mutate sends every mutation of every gold write, each in a session of
// its own on a fresh world after the task's earlier gold actions.
func (r *replay) mutate(ctx context.Context, sum *Summary) error {
	for _, t := range r.tasks {
		w := r.world.Clone()
		for k, a := range t.Actions {
			if airline.Writes[a.Name] {
				for _, m := range mutations(w, t, k, r.facts[t.Index]) {
					if err := r.putUpstream(ctx); err != nil {
						return err
					}
					s, err := r.open(ctx, t.Instruction, m.facts)
					if err != nil {
						return err
					}
					for _, b := range t.Actions[:k] {
						r.call(ctx, s, b.Name, b.Arguments)
					}
					raw, _ := json.Marshal(m.args)
					o := r.call(ctx, s, a.Name, raw)
					mr := MutationResult{Task: t.Index, Index: k, Tool: a.Name, Mutation: m.name, Rule: m.rule, Refused: !o.admitted(),
						Rules: o.rules(), Codes: codes(o.Failures), F3: o.has("F3"), Problem: o.Problem}
					// A mutation of a write that already breaks a rule may
					// be refused naming that one (a refusal's core is
					// minimal).
					v := r.verdicts[[2]int{t.Index, k}]
					mr.Named = mr.Refused && (contains(mr.Rules, m.rule) || (!v.Compliant && WriteResult{Rule: v.Rule, Also: v.Also, Rules: mr.Rules}.names()))
					sum.Mutations = append(sum.Mutations, mr)
					if mr.F3 {
						sum.MutationsF3++
						continue
					}
					c := sum.MutationsByRule[m.rule]
					if mr.Named {
						c[0]++
					}
					if mr.Refused {
						c[1]++
					}
					c[2]++
					sum.MutationsByRule[m.rule] = c
				}
			}
			w.Call(a.Name, a.Arguments)
		}
	}
	return nil
}
