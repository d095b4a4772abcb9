" MLIR textual IR, enough to read what Torch-MLIR Lens shows: comments, SSA values, blocks,
" symbols, op names, types, attributes aliases, numbers and strings. Neovim ships no MLIR
" syntax; a tree-sitter highlighter, where installed, takes over.
if exists('b:current_syntax')
  finish
endif

syntax case match

syntax keyword mlirKeyword module func return to ins outs attributes iter_types indexing_maps
syntax keyword mlirKeyword affine_map affine_set dense dense_resource sparse array loc
syntax keyword mlirBoolean true false
syntax match mlirType /\<\%(tensor\|memref\|vector\|complex\|tuple\)\ze</
syntax match mlirType /\<\%(b\?f\|[su]\?i\)\d\+\>/
syntax match mlirType /\<\%(index\|none\|bf16\|tf32\)\>/
syntax match mlirType /!\%(\h\w*\.\)*\h[[:alnum:]_.]*/
syntax match mlirOperation /\<\h\w*\.\h[[:alnum:]_.]*\ze\s*[({<"]/
syntax match mlirOperation /=\s*\zs\h\w*\.\h[[:alnum:]_.]*/
syntax match mlirOperation /^\s*\zs\h\w*\.\h[[:alnum:]_.]*/
syntax match mlirValue /%[[:alnum:]_.$#-]\+/
syntax match mlirBlock /\^[[:alnum:]_.$-]\+/
syntax match mlirSymbol /@[[:alnum:]_.$-]\+/
syntax match mlirSymbol /@"[^"]*"/
syntax match mlirAttribute /#[[:alnum:]_.$-]\+/
syntax match mlirNumber /\<-\?\d\+\%(\.\d*\)\?\%([eE][+-]\?\d\+\)\?\>/
syntax match mlirNumber /\<0x\x\+\>/
syntax region mlirString start=/"/ skip=/\\\\\|\\"/ end=/"/ oneline
syntax match mlirComment "//.*$" contains=@Spell,mlirTodo
syntax keyword mlirTodo TODO FIXME XXX contained

highlight default link mlirKeyword Keyword
highlight default link mlirBoolean Boolean
highlight default link mlirType Type
highlight default link mlirOperation Statement
highlight default link mlirValue Identifier
highlight default link mlirBlock Label
highlight default link mlirSymbol Function
highlight default link mlirAttribute PreProc
highlight default link mlirNumber Number
highlight default link mlirString String
highlight default link mlirComment Comment
highlight default link mlirTodo Todo

let b:current_syntax = 'mlir'
