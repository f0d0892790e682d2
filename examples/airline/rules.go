// Package airline is the example of τ-bench's airline domain behind
// groundgate: the upstream configuration, the sync overlay, the policies
// that state policy.md as rules over a session's state, and
// gold-writes.json, every gold write of the 50 tasks read against the
// policy (gold_test.go makes it from the world and the verdicts below and
// checks it). See README.md.
package airline

// Rule is one rule of policy.md: its name (the policies' :named
// assertion) and the sentence it encodes, quoted from policy.md.
type Rule struct {
	Name     string `json:"rule"`
	Sentence string `json:"sentence"`
	// Enforced says how the gate decides it: "state" (from the call's
	// arguments, the session's trusted state and the clock), "facts"
	// (also from what the host asserted of the user's words), "schema"
	// (the tool's arguments cannot express a breach), or "no" (nothing the
	// gate sees decides it).
	Enforced string `json:"enforced"`
	Note     string `json:"note,omitempty"`
}

// Rules are the rules of policy.md that concern the six writes, in
// policy.md's order.
var Rules = []Rule{
	{"explicit_user_confirmation", "Before taking any actions that update the booking database (booking, modifying flights, editing baggage, upgrading cabin class, or updating passenger information), you must list the action details and obtain explicit user confirmation (yes) to proceed.", "no",
		"the user's \"yes\" is a word of a later turn of the conversation; a host could assert it as a fact, but then the gate checks the host's say-so, not the user's. Not encoded."},
	{"book_only_available_flights", `If the status is "delayed" or "on time", the flight has not taken off, cannot be booked.`, "state",
		"a flight is bookable when search_direct_flight lists it (it lists only available flights) for its route (from the timetable) and date; no tool reads a flight's status"},
	{"at_most_five_passengers", "Passengers: Each reservation can have at most five passengers.", "state", ""},
	{"same_flights_same_cabin_for_all_passengers", "All passengers must fly the same flights in the same cabin.", "schema",
		"book_reservation takes one flight list and one cabin for all passengers"},
	{"payment_at_most_one_certificate_one_card_three_gift_cards", "Payment: each reservation can use at most one travel certificate, at most one credit card, and at most three gift cards.", "state", ""},
	{"payment_methods_in_user_profile", "All payment methods must already be in user profile for safety reasons.", "state",
		"the profile is the user's get_user_details result in the session"},
	{"nonfree_bags_follow_the_allowance", "If the booking user is a regular member, 0 free checked bag for each basic economy passenger, 1 free checked bag for each economy passenger, and 2 free checked bags for each business passenger.", "state",
		"nonfree_baggages = max(0, total_baggages − free bags per passenger × passengers), by the booking user's membership and the cabin (every one of db/'s 2,000 reservations holds it)"},
	{"basic_economy_flights_cannot_be_modified", "Change flights: Basic economy flights cannot be modified.", "state",
		"a basic economy reservation may be sent to update_reservation_flights with its own flights only (a cabin change, which policy.md allows)"},
	{"flight_change_keeps_origin_destination_trip_type", "Other reservations can be modified without changing the origin, destination, and trip type.", "state",
		"the new flights start at the reservation's origin and end at its destination (one way) or back at its origin after reaching its destination (round trip); a flight's route is read from the timetable the policy carries (no tool reads a flight by number)"},
	{"cabin_same_across_flights", "Cabin class must be the same across all the flights in the same reservation; changing cabin for just one flight segment is not possible.", "schema",
		"update_reservation_flights takes one cabin for the whole reservation"},
	{"bags_added_never_removed", "Change baggage and insurance: The user can add but not remove checked bags.", "state", ""},
	{"no_insurance_after_booking", "The user cannot add insurance after initial booking.", "schema",
		"no tool adds insurance to a reservation"},
	{"passenger_count_is_fixed", "Change passengers: The user can modify passengers but cannot modify the number of passengers.", "state", ""},
	{"flight_change_paid_by_gift_card_or_credit_card", "Payment: If the flights are changed, the user needs to provide one gift card or credit card for payment or refund method.", "state", ""},
	{"cancel_within_24h_or_airline_cancelled_or_business_or_insured_for_health_or_weather", "All reservations can be cancelled within 24 hours of booking, or if the airline cancelled the flight. Otherwise, basic economy or economy flights can be cancelled only if travel insurance is bought and the condition is met, and business flights can always be cancelled.", "facts",
		"created_at, cabin and insurance from the reservation read in the session; \"the condition\" (health or weather, policy.md's insurance sentence) and the airline's cancellation are the reason the user gave, the host's fact cancel_reason: no tool reads a flight's status, so the gate cannot confirm an airline cancellation"},
	{"cancel_only_unflown_trips", "The agent can only cancel the whole trip that is not flown. If any of the segments are already used, the agent cannot help and transfer is needed.", "state",
		"a segment is used once its scheduled departure (the timetable's, EST) is past: no tool reads a flight's status, so a delayed flight of today counts as used (a refusal on the safe side)"},
	{"certificate_only_for_members_insured_or_business", "Do not compensate if the user is regular member and has no travel insurance and flies (basic) economy.", "state", ""},
	{"certificate_only_for_a_confirmed_cancelled_or_delayed_flight", "If the user is silver/gold member or has travel insurance or flies business, and complains about cancelled flights in a reservation, the agent can offer a certificate as a gesture after confirming the facts, with the amount being $100 times the number of passengers.", "facts",
		"the complaint (cancelled or delayed) is the host's fact complaint; the gate confirms what the state can: one of the user's reservations read in the session has a flight that can have been delayed (dated today) or cancelled (dated today or before); no tool reads a flight's status"},
	{"certificate_amount_100_or_50_per_passenger", "with the amount being $50 times the number of passengers.", "facts",
		"$100 × passengers of the reservation with the cancelled flight, $50 × passengers of the one with the delayed flight"},
	{"delay_certificate_only_after_change_or_cancel", "If the user is silver/gold member or has travel insurance or flies business, and complains about delayed flights in a reservation and wants to change or cancel the reservation, the agent can offer a certificate as a gesture after confirming the facts and changing or cancelling the reservation", "state",
		"the session's state holds a cancel_reservation or update_reservation_flights of that reservation"},
	{"certificate_only_when_user_asks", "Do not proactively offer these unless the user complains about the situation and explicitly asks for some compensation.", "facts",
		"the host's fact asked_for_compensation"},
	{"refund_to_original_payment", "The refund will go to original payment methods in 5 to 7 business days.", "schema",
		"cancel_reservation takes no refund method: the tool refunds the original payments"},
}

// RuleByName is Rules by name.
func RuleByName(name string) (Rule, bool) {
	for _, r := range Rules {
		if r.Name == name {
			return r, true
		}
	}
	return Rule{}, false
}
