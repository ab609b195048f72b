import{c as r,s as e}from"./flowDiagram-HODETNUW-4JZK90cj.js";import{_ as a}from"./renderer-B9i2LY8O.js";import"./chunk-5VM5RSS4-CN9wTR-8.js";import"./chunk-XXDRQBXY-DVasHlSI.js";import"./chunk-POPQ4Y6H-CVzakKAZ.js";import"./chunk-F27PBJKO-Fu6VXLUN.js";import"./preload-helper-BVROlKwR.js";import"./channel-C0VqDVdE.js";var o=a(t=>`${e(t)}
  .swimlane.cluster rect {
    stroke: ${t.clusterBorder} !important;
  }
  [data-look="neo"].cluster rect {
    filter: none;
  }
`,"getStyles"),s=o,n=r({defaultLayout:"swimlane",styles:s});export{n as diagram};
