import{U as a,C as n}from"./renderer-B9i2LY8O.js";const t=(r,o)=>a.lang.round(n.parse(r)[o]);export{t as c};
