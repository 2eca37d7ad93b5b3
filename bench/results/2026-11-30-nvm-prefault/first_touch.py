import mmap, os, sys, time
path=sys.argv[1]; n=256<<20
fd=os.open(path, os.O_RDWR|os.O_CREAT|os.O_TRUNC); os.ftruncate(fd,n)
m=mmap.mmap(fd,n)
buf=b'x'*(1<<20)
t=time.time()
for i in range(0,n,1<<20): m[i:i+(1<<20)]=buf
t1=time.time()
for i in range(0,n,1<<20): m[i:i+(1<<20)]=buf
t2=time.time()
print("first touch %.3f s, second %.3f s"%(t1-t,t2-t1))
m.close(); os.close(fd); os.unlink(path)
