#!/usr/bin/env python3
# Import cycles between the modules of one crate: python3 tools/import_cycles.py <crate>/src
# A module imports another when it names it by a crate::, super:: or self:: path (re-exports
# resolved to the re-exporting module); prints pairs that import each other and larger cycles.
import re, os, sys
root=sys.argv[1] if len(sys.argv) > 1 else 'crates/burn-sparse-gnn/src'
files={}
for d,_,fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            p=os.path.join(d,f); rel=os.path.relpath(p,root)
            mod=rel[:-3].replace(os.sep,'::')
            if mod.endswith('::mod'): mod=mod[:-5]
            if mod=='lib': mod=''
            files[mod]=rel
def resolve(path):
    # longest prefix that is a module file
    segs=path.split('::')
    for i in range(len(segs),0,-1):
        m='::'.join(segs[:i])
        if m in files: return m
    return None
edges={}
for mod,rel in files.items():
    src=open(os.path.join(root,rel)).read()
    code='\n'.join(l.split('//')[0] for l in src.split('\n'))
    deps=set()
    parent=mod.rsplit('::',1)[0] if '::' in mod else ''
    for m in re.finditer(r'\b(crate|super|self)::([\w:]+)', code):
        kind,rest=m.group(1),m.group(2)
        rest=rest.rstrip(':')
        if kind=='crate': full=rest
        elif kind=='super':
            base=mod if rel.endswith('mod.rs') else mod
            base=base.rsplit('::',1)[0] if '::' in base else ''
            full=(base+'::'+rest) if base else rest
        else:
            base=mod if rel.endswith('mod.rs') or mod=='' else (mod.rsplit('::',1)[0] if '::' in mod else '')
            full=(base+'::'+rest) if base else rest
        # brace imports: crate::a::{b, c::d}
        t=resolve(full)
        if t is not None and t!=mod: deps.add(t)
    # `pub use child::x` / `use child::x` inside a mod.rs
    for m in re.finditer(r'^\s*(?:pub(?:\([\w]+\))? )?use ([a-z_]\w*)::', code, re.M):
        first=m.group(1)
        if first in ('crate','super','self','std','burn','burn_cubecl','cubecl','sparse_gnn_kernels','serde','rayon','rand','cudarc','thiserror','burn_ndarray','burn_autodiff','half','log','metis'): continue
        t=resolve((mod+'::' if mod else '')+first)
        if t and t!=mod: deps.add(t)
    # braces: crate::x::{a, b::c}
    for m in re.finditer(r'crate::([\w:]+)::\{([^}]*)\}', code):
        for item in m.group(2).split(','):
            item=item.strip().split(' as ')[0]
            if not item: continue
            t=resolve(m.group(1)+'::'+item)
            if t and t!=mod: deps.add(t)
    edges[mod]=deps
pairs=[(a,b) for a in edges for b in edges[a] if a in edges.get(b,()) and a<b]
print('modules:',len(files),' import edges:',sum(len(v) for v in edges.values()))
print('mutual imports (A<->B):', pairs if pairs else 'none')
# full cycles via SCC
sys.setrecursionlimit(10000)
idx={};low={};st=[];on=set();sccs=[];c=[0]
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in edges[v]:
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        if len(comp)>1: sccs.append(comp)
for v in edges:
    if v not in idx: sc(v)
print('longer cycles (strongly connected groups):', sccs if sccs else 'none')
if '-v' in sys.argv:
    for a in sorted(edges): print(a or 'lib', '->', sorted(x or 'lib' for x in edges[a]))
