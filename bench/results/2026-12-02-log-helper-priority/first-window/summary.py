# Per run: mean write latency (µs), mean read latency (µs), stall seconds, compaction
# seconds and process CPU seconds of the fill, its median write latency (µs) and its mean
# write latency less the stall time per write (µs); then the medians per label.
# usage: python3 summary.py DIR
import json,sys,glob,re,statistics
d=sys.argv[1]
rows={}
for f in sorted(glob.glob(d+'/*.jsonl')):
    lab=re.sub(r'-\d+$','',f.split('/')[-1][:-6])
    recs=[json.loads(l) for l in open(f)]
    fill=[r for r in recs if r['benchmark'] in('fillrandom',)][0]
    rd=[r for r in recs if r['benchmark']=='readrandom']
    es=fill.get('engine_stats') or {}
    row=(fill['latency']['write']['mean_us'], rd[0]['latency']['read']['mean_us'] if rd else 0,
         (fill['engine_interval'] or {}).get('stall_micros',0)/1e6, es.get('compaction_micros',0)/1e6,
         fill['process']['cpu_user_secs']+fill['process']['cpu_sys_secs'],
         fill['latency']['write']['p50_us'],
         fill['latency']['write']['mean_us']-(fill['engine_interval'] or {}).get('stall_micros',0)/fill['ops'])
    rows.setdefault(lab,[]).append(row)
    print(f.split('/')[-1], ' '.join('%.3f'%x for x in row))
for lab,rs in rows.items():
    print('median',lab,' '.join('%.3f'%statistics.median(c) for c in zip(*rs)))
