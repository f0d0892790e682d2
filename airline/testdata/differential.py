# Random calls of the 14 tools (errors included) on τ-bench's db, run by
# τ-bench's reference tools in sequence on one world: their outputs and the final
# digest, for TestDifferential, which runs it itself. By hand:
#   TAU_AIRLINE=SHARED/data/tau-airline PYTHONPATH=DIR python3 differential.py SEED N OUT.json
# where DIR/tau_bench/envs/tool.py defines an empty `class Tool: pass`; then
#   AIRLINE_DIFF=OUT.json go test -run TestDifferential ./airline/
import json, random, copy, hashlib, importlib.util, glob, os, sys
SRC=os.environ['TAU_AIRLINE']
db={k: json.load(open(f'{SRC}/db/{k}.json')) for k in ['users','reservations','flights']}
tools={}
for p in glob.glob(f'{SRC}/reference/*.py'):
    spec=importlib.util.spec_from_file_location(os.path.basename(p)[:-3], p)
    m=importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    for v in vars(m).values():
        if isinstance(v,type) and hasattr(v,'get_info') and v.__module__==m.__name__:
            tools[v.get_info()['function']['name']]=v
rnd=random.Random(int(sys.argv[1]))
users=list(db['users']); res=list(db['reservations']); fl=list(db['flights'])
airports=sorted({f['origin'] for f in db['flights'].values()})
dates=[f'2024-05-{d:02d}' for d in range(1,31)]
cabins=['basic_economy','economy','business']
def pay(u):
    return rnd.choice(list(db['users'][u]['payment_methods'])+['gift_card_0'])
def fref():
    return {'flight_number': rnd.choice(fl+['HAT999']), 'date': rnd.choice(dates+['2024-06-01'])}
def pax(n):
    return [{'first_name': rnd.choice(['Ann','Zoé','Bob']), 'last_name':'X', 'dob':'1990-01-01'} for _ in range(n)]
calls=[]
for i in range(int(sys.argv[2])):
    k=rnd.randrange(12)
    r=rnd.choice(res+['NOSUCH']); u=rnd.choice(users)
    ru=db['reservations'][r]['user_id'] if r in db['reservations'] else u
    if k==0: calls.append(('get_user_details',{'user_id':u}))
    elif k==1: calls.append(('get_reservation_details',{'reservation_id':r}))
    elif k==2: calls.append(('search_direct_flight',{'origin':rnd.choice(airports),'destination':rnd.choice(airports),'date':rnd.choice(dates)}))
    elif k==3: calls.append(('search_onestop_flight',{'origin':rnd.choice(airports),'destination':rnd.choice(airports),'date':rnd.choice(dates)}))
    elif k==4: calls.append(('cancel_reservation',{'reservation_id':r}))
    elif k==5:
        n=len(db['reservations'][r]['passengers']) if r in db['reservations'] else 1
        calls.append(('update_reservation_passengers',{'reservation_id':r,'passengers':pax(n if rnd.random()<0.8 else n+1)}))
    elif k==6: calls.append(('update_reservation_baggages',{'reservation_id':r,'total_baggages':rnd.randrange(5),'nonfree_baggages':rnd.randrange(4),'payment_id':pay(ru)}))
    elif k==7:
        fs=[{'flight_number':f['flight_number'],'date':f['date']} for f in db['reservations'][r]['flights']] if r in db['reservations'] else []
        if fs and rnd.random()<0.7: fs[rnd.randrange(len(fs))]=fref() if rnd.random()<0.3 else {'flight_number':fs[0]['flight_number'],'date':rnd.choice(dates[15:])}
        calls.append(('update_reservation_flights',{'reservation_id':r,'cabin':rnd.choice(cabins),'flights':fs,'payment_id':pay(ru)}))
    elif k==8: calls.append(('send_certificate',{'user_id':u,'amount':rnd.choice([50,100,12.5])}))
    elif k==9: calls.append(('calculate',{'expression':rnd.choice(['1+2*3','10/4','(3-5)*2.5','7//2','2**10','1/3','100 - 99.99'])}))
    elif k==10: calls.append(('list_all_airports',{}))
    else:
        f=rnd.choice(fl); d=rnd.choice(dates[15:]); n=rnd.randrange(1,3)
        pm=[{'payment_id':pay(u),'amount':rnd.choice([100,500,1000])}]
        fd=db['flights'][f]['dates'][d]
        cab=rnd.choice(cabins)
        if rnd.random()<0.5 and 'prices' in fd:
            pid=rnd.choice([p for p,v in db['users'][u]['payment_methods'].items()])
            pm=[{'payment_id':pid,'amount':fd['prices'][cab]*n}]
        calls.append(('book_reservation',{'user_id':u,'origin':'X','destination':'Y','flight_type':'one_way','cabin':cab,'flights':[{'flight_number':f,'date':d}],'passengers':pax(n),'payment_methods':pm,'total_baggages':0,'nonfree_baggages':0,'insurance':'no'}))
d=copy.deepcopy(db); outs=[]
for name,args in calls:
    try: o=tools[name].invoke(data=d, **copy.deepcopy(args))
    except Exception as e: o=f'Error: {e}'
    outs.append(o)
dig='sha256:'+hashlib.sha256(json.dumps(d,sort_keys=True,separators=(',',':'),ensure_ascii=False).encode()).hexdigest()
json.dump({'calls':[{'name':n,'arguments':a,'output':o} for (n,a),o in zip(calls,outs)],'final_db':dig}, open(sys.argv[3],'w'))
import collections; print(collections.Counter(n for n,_ in calls), sum(1 for o in outs if isinstance(o,str) and o.startswith('Error')), 'errors')
