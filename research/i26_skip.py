import json,glob,collections,random
from judge.split.checkable import checkable_reason, grounded
skip=collections.Counter(); chk=collections.Counter(); ex=collections.defaultdict(list)
seen=set()
for f in glob.glob('/work/shared/gold/external/*.jsonl')+['gold/regression.jsonl','gold/samples/gold.jsonl']:
    for line in open(f):
        d=json.loads(line); c=d['claim']
        if c in seen: continue
        seen.add(c)
        st=str(d.get('subtype')); r=checkable_reason(c, bool(d.get('citations')) and False)
        if d['label']=='not_verifiable':
            grp=st
        else: grp='checkable'
        skip[(grp, r is not None)]+=1
        ex[(grp, r is not None)].append((c,r))
for k,v in sorted(skip.items()): print(k,v)
random.seed(3)
for k in [('generic',True),('not_a_claim',True),('checkable',False)]:
    print(k)
    for c,r in random.sample(ex[k],min(12,len(ex[k]))): print('   ',r,'|',c[:140])
