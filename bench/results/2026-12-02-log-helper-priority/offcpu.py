# Off-CPU time of one thread from `perf script -F comm,tid,time,trace,ip,sym` of a
# `perf record -e sched:sched_switch --call-graph dwarf` run: per switch-out stack, the
# time until the thread ran again.  usage: offcpu.py SCRIPT_OUTPUT TID [FRAMES]
import re,sys,collections
txt=open(sys.argv[1]).read().split('\n\n')
pid=None
out={}  # tid -> (time, stack)
agg=collections.Counter(); cnt=collections.Counter(); big=[]
hdr=re.compile(r'^(\S.*?)\s+(\d+)\s+([\d.]+): prev_comm=(.*?) prev_pid=(\d+) .*?prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)')
for rec in txt:
    lines=rec.strip('\n').split('\n')
    if not lines or not lines[0]: continue
    m=hdr.match(lines[0])
    if not m: continue
    t=float(m.group(3)); prev=int(m.group(5)); nxt=int(m.group(8))
    if pid is None: pid=int(sys.argv[2])
    if prev==pid:
        syms=[l.split()[-1] for l in lines[1:] if len(l.split())>=2]
        key=None
        for s in syms:
            if any(x in s for x in ('mezz','log','wal','Log','Wal','append','nanosleep','sched_yield','recv','make_room','write')) and not s.startswith('__schedule'):
                key=s; break
        # choose a compact signature: first 6 user-ish symbols
        sig=' < '.join([s for s in syms if not s.startswith(('__schedule','schedule','entry_','do_syscall','0x','(inlined)'))][:int(sys.argv[3]) if len(sys.argv)>3 else 7])
        out[prev]=(t,sig,m.group(6))
    if nxt==pid and pid in out:
        t0,sig,st=out.pop(pid)
        d=t-t0
        agg[(st,sig)]+=d; cnt[(st,sig)]+=1
        if d>0.001: big.append((d,st,sig))
tot=sum(agg.values())
print('total off-cpu %.3f s'%tot)
for k,v in agg.most_common(15): print('%.3f s %6d %s %s'%(v,cnt[k],k[0],k[1][:250]))
print('over 1 ms:',len(big), '%.3f s'%sum(b[0] for b in big))
c=collections.Counter(); cc=collections.Counter()
for d,st,sig in big: c[(st,sig)]+=d; cc[(st,sig)]+=1
for k,v in c.most_common(10): print('  %.3f s %5d %s %s'%(v,cc[k],k[0],k[1][:300]))
