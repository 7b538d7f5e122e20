// The p99 experiments of docs/bench-history/http.md ("Instructions per request, and who sets
// the pace"; "Reading in arrival order"): a bare epoll server answering every request with the
// same 22-byte body. Mode 0 level-triggered (libuv's way), 1 edge-triggered (nginx's way), 2
// edge-triggered connections in an inner epoll whose descriptor sits in a level-triggered outer
// epoll (heartwheel's edge reader under libuv: a uv_poll_t on the inner set).
//   gcc -O2 http_epoll_lt_et.c -o ep && ./ep MODE 18095   (then wrk -t1 -c50 -d5s --latency)
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
static const char resp[]="HTTP/1.1 200 OK\r\nServer: x\r\nDate: Sat, 28 Nov 2026 17:00:00 GMT\r\nContent-Type: text/plain\r\nContent-Length: 22\r\n\r\nHello from heartwheel\n";
static char buf[65536];
static void serve(int fd){
  for(;;){ ssize_t r=recv(fd,buf,sizeof buf,0); if(r<=0){ if(r==0){close(fd);} break;}
    int k=0; for(ssize_t j=3;j<r;j++) if(buf[j]=='\n'&&buf[j-1]=='\r'&&buf[j-2]=='\n'&&buf[j-3]=='\r') k++;
    for(int q=0;q<k;q++) write(fd,resp,sizeof resp-1);
    if(r<(ssize_t)sizeof buf) break; }
}
int main(int argc,char**argv){
  int mode=atoi(argv[1]); int port=atoi(argv[2]);
  int l=socket(AF_INET,SOCK_STREAM|SOCK_NONBLOCK,0); int one=1; setsockopt(l,SOL_SOCKET,SO_REUSEADDR,&one,sizeof one);
  struct sockaddr_in a={.sin_family=AF_INET,.sin_port=htons(port)}; a.sin_addr.s_addr=htonl(0x7f000001);
  if(bind(l,(void*)&a,sizeof a)){perror("bind");return 1;} listen(l,1024);
  int ep=epoll_create1(0); struct epoll_event ev={.events=EPOLLIN,.data.fd=l}; epoll_ctl(ep,EPOLL_CTL_ADD,l,&ev);
  int inner=-1;
  if(mode==2){ inner=epoll_create1(0); struct epoll_event e={.events=EPOLLIN,.data.fd=inner}; epoll_ctl(ep,EPOLL_CTL_ADD,inner,&e); }
  int cep = mode==2 ? inner : ep;
  struct epoll_event evs[1024], ievs[1024];
  for(;;){ int n=epoll_wait(ep,evs,1024,-1);
    for(int i=0;i<n;i++){ int fd=evs[i].data.fd;
      if(fd==l){ int c; while((c=accept4(l,0,0,SOCK_NONBLOCK))>=0){ setsockopt(c,IPPROTO_TCP,TCP_NODELAY,&one,sizeof one); struct epoll_event e={.events=EPOLLIN|(mode?EPOLLET:0),.data.fd=c}; epoll_ctl(cep,EPOLL_CTL_ADD,c,&e);} continue; }
      if(fd==inner){ int m=epoll_wait(inner,ievs,1024,0); for(int j=0;j<m;j++) serve(ievs[j].data.fd); continue; }
      serve(fd);
    } }
}
