# Run as: PYTHONPATH=DIR python3 make_fixture.py airline/testdata 0,1,2,9,14,16,19,26,34
# where DIR/tau_bench/envs/tool.py defines an empty `class Tool: pass`.
# Builds airline/testdata: a small world cut from shared/data/tau-airline/db
# and τ-bench's own reference tools run on it (the oracle of the fixture).
import json, sys, copy, hashlib, importlib.util, glob, os
SRC = '/work/shared/data/tau-airline'
OUT = sys.argv[1]
db = {k: json.load(open(f'{SRC}/db/{k}.json')) for k in ['users', 'reservations', 'flights']}
tasks = json.load(open(f'{SRC}/tasks.json'))
pick = [int(x) for x in sys.argv[2].split(',')]
users, res, flights, routes = set(), set(), set(), set()
for i in pick:
    t = tasks[i]
    users.add(t['user_id'])
    for a in t['actions']:
        g = a['arguments']
        if 'user_id' in g: users.add(g['user_id'])
        if 'reservation_id' in g: res.add(g['reservation_id'])
        for f in g.get('flights', []): flights.add(f['flight_number'])
        if a['name'] == 'search_direct_flight': routes.add((g['origin'], g['destination']))
for r in list(res):
    if r in db['reservations']: users.add(db['reservations'][r]['user_id'])
for u in users:
    res.update(db['users'][u]['reservations'])
for r in res:
    for f in db['reservations'][r]['flights']: flights.add(f['flight_number'])
for n, f in db['flights'].items():
    if (f['origin'], f['destination']) in routes: flights.add(n)
dates = {}
for i in pick:
    for a in tasks[i]['actions']:
        g = a['arguments']
        if 'date' in g: dates.setdefault('*', set()).add(g['date'])
        for f in g.get('flights', []): dates.setdefault(f['flight_number'], set()).add(f['date'])
for r in res:
    for f in db['reservations'][r]['flights']: dates.setdefault(f['flight_number'], set()).add(f['date'])
for n in flights:
    keep = dates.get(n, set()) | dates.get('*', set())
    db['flights'][n]['dates'] = {d: v for d, v in db['flights'][n]['dates'].items() if d in keep}
world = {
    'users': {k: v for k, v in db['users'].items() if k in users},
    'reservations': {k: v for k, v in db['reservations'].items() if k in res},
    'flights': {k: v for k, v in db['flights'].items() if k in flights},
}
os.makedirs(f'{OUT}/db', exist_ok=True)
for k, v in world.items():
    json.dump(v, open(f'{OUT}/db/{k}.json', 'w'))
tools = {}
for p in glob.glob(f'{SRC}/reference/*.py'):
    spec = importlib.util.spec_from_file_location(os.path.basename(p)[:-3], p)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    for v in vars(m).values():
        if isinstance(v, type) and hasattr(v, 'get_info') and v.__module__ == m.__name__:
            tools[v.get_info()['function']['name']] = v
def digest(d):
    return 'sha256:' + hashlib.sha256(json.dumps(d, sort_keys=True, separators=(',', ':'), ensure_ascii=False).encode()).hexdigest()
out = {'initial_db': digest(world), 'tasks': []}
for i in pick:
    d = copy.deepcopy(world)
    outs = []
    for a in tasks[i]['actions']:
        try:
            o = tools[a['name']].invoke(data=d, **a['arguments'])
        except Exception as e:
            o = f'Error: {e}'
        outs.append(o)
    out['tasks'].append({'index': i, 'actions': tasks[i]['actions'], 'outputs': outs, 'final_db': digest(d)})
probes = [
    ('get_reservation_details', {'reservation_id': 'NOSUCH'}),
    ('get_user_details', {'user_id': 'nobody_1'}),
    ('cancel_reservation', {'reservation_id': 'NOSUCH'}),
    ('send_certificate', {'user_id': 'nobody_1', 'amount': 100}),
    ('send_certificate', {'user_id': 'mia_li_3668', 'amount': 12.5}),
    ('calculate', {'expression': '1/0'}),
    ('calculate', {'expression': '10 / 3'}),
    ('calculate', {'expression': '(2.5 + 2.5) * 3'}),
    ('calculate', {'expression': 'x+1'}),
    ('update_reservation_passengers', {'reservation_id': 'Z7GOZK', 'passengers': []}),
    ('update_reservation_passengers', {'reservation_id': 'Z7GOZK', 'passengers': [{'first_name': 'Zoé', 'last_name': 'Ünal', 'dob': '1990-01-01'}]}),
    ('update_reservation_baggages', {'reservation_id': 'Z7GOZK', 'total_baggages': 2, 'nonfree_baggages': 2, 'payment_id': 'certificate_nope'}),
    ('update_reservation_baggages', {'reservation_id': 'Z7GOZK', 'total_baggages': 2, 'nonfree_baggages': 2, 'payment_id': 'gift_card_2200803'}),
    ('update_reservation_baggages', {'reservation_id': 'Z7GOZK', 'total_baggages': 0, 'nonfree_baggages': 0, 'payment_id': 'gift_card_2200803'}),
    ('update_reservation_flights', {'reservation_id': 'Z7GOZK', 'cabin': 'economy', 'flights': [{'flight_number': 'HAT999', 'date': '2024-05-28'}], 'payment_id': 'gift_card_2200803'}),
    ('update_reservation_flights', {'reservation_id': 'Z7GOZK', 'cabin': 'economy', 'flights': [{'flight_number': 'HAT188', 'date': '2024-05-01'}], 'payment_id': 'gift_card_2200803'}),
    ('update_reservation_flights', {'reservation_id': 'Z7GOZK', 'cabin': 'business', 'flights': [{'flight_number': 'HAT188', 'date': '2024-05-28'}, {'flight_number': 'HAT207', 'date': '2024-05-28'}], 'payment_id': 'gift_card_2200803'}),
    ('update_reservation_flights', {'reservation_id': 'Z7GOZK', 'cabin': 'basic_economy', 'flights': [{'flight_number': 'HAT188', 'date': '2024-05-28'}], 'payment_id': 'gift_card_2200803'}),
    ('book_reservation', {'user_id': 'mia_li_3668', 'origin': 'JFK', 'destination': 'SEA', 'flight_type': 'one_way', 'cabin': 'economy', 'flights': [{'flight_number': 'HAT136', 'date': '2024-05-20'}], 'passengers': [{'first_name': 'Mia', 'last_name': 'Li', 'dob': '1990-04-05'}], 'payment_methods': [{'payment_id': 'credit_card_4421486', 'amount': 100.5}], 'total_baggages': 0, 'nonfree_baggages': 0, 'insurance': 'yes'}),
    ('book_reservation', {'user_id': 'mia_li_3668', 'origin': 'JFK', 'destination': 'SEA', 'flight_type': 'one_way', 'cabin': 'economy', 'flights': [{'flight_number': 'HAT136', 'date': '2024-05-20'}], 'passengers': [{'first_name': 'Mia', 'last_name': 'Li', 'dob': '1990-04-05'}], 'payment_methods': [{'payment_id': 'certificate_4856383', 'amount': 150}, {'payment_id': 'credit_card_4421486', 'amount': 62.0}], 'total_baggages': 1, 'nonfree_baggages': 1, 'insurance': 'no'}),
    ('book_reservation', {'user_id': 'mia_li_3668', 'origin': 'JFK', 'destination': 'SEA', 'flight_type': 'one_way', 'cabin': 'economy', 'flights': [{'flight_number': 'HAT136', 'date': '2024-05-20'}], 'passengers': [{'first_name': 'Mia', 'last_name': 'Li', 'dob': '1990-04-05'}], 'payment_methods': [{'payment_id': 'certificate_4856383', 'amount': 100}, {'payment_id': 'credit_card_4421486', 'amount': 102.0}], 'total_baggages': 1, 'nonfree_baggages': 1, 'insurance': 'no'}),
    ('update_reservation_flights', {'reservation_id': 'NO6JO3', 'cabin': 'economy', 'flights': [], 'payment_id': 'certificate_7504069'}),
    ('update_reservation_flights', {'reservation_id': 'NO6JO3', 'cabin': 'economy', 'flights': [], 'payment_id': 'credit_card_4421486'}),
    ('cancel_reservation', {'reservation_id': 'Z7GOZK'}),
    ('book_reservation', {'user_id': 'mia_li_3668', 'origin': 'JFK', 'destination': 'SEA', 'flight_type': 'one_way', 'cabin': 'economy', 'flights': [{'flight_number': 'HAT136', 'date': '2024-05-20'}], 'passengers': [], 'payment_methods': [{'payment_id': 'gift_card_0', 'amount': 0}], 'total_baggages': 0, 'nonfree_baggages': 0, 'insurance': 'no'}),
]
out['probes'] = []
for name, args in probes:
    d = copy.deepcopy(world)
    try:
        o = tools[name].invoke(data=d, **args)
    except Exception as e:
        o = f'Error: {e}'
    out['probes'].append({'name': name, 'arguments': args, 'output': o, 'final_db': digest(d)})
json.dump(out, open(f'{OUT}/oracle.json', 'w'), indent=1, ensure_ascii=False)
