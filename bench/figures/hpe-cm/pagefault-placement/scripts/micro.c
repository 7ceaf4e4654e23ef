#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static double pingpong(int ca,int cb,int n){int a[2],b[2];char x=0;pipe(a);pipe(b);
 pid_t p=fork();if(!p){pin(cb);for(int i=0;i<n;i++){read(a[0],&x,1);write(b[1],&x,1);}_exit(0);}
 pin(ca);usleep(1000);double t=now();for(int i=0;i<n;i++){write(a[1],&x,1);read(b[0],&x,1);}double e=now()-t;waitpid(p,0,0);
 close(a[0]);close(a[1]);close(b[0]);close(b[1]);return e/n/1000;}
int main(int argc,char**argv){int c=argc>1?atoi(argv[1]):0;pin(c);int n=200000;double t=now();for(int i=0;i<n;i++)getppid();double sc=(now()-t)/n;
 size_t sz=32<<20;char*m=mmap(0,sz,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);madvise(m,sz,MADV_NOHUGEPAGE);
 t=now();for(size_t i=0;i<sz;i+=4096)m[i]=1;double pf=(now()-t)/(sz/4096)/1000;
 double same=pingpong(c,c,20000), cross=pingpong(c,1-c,20000);
 printf("{\"cpu\": %d, \"syscall_ns\": %.0f, \"anon_fault_us\": %.2f, \"rt_same_cpu_us\": %.2f, \"rt_cross_cpu_us\": %.2f}\n",c,sc,pf,same,cross);return 0;}
