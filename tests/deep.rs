//! Long and deep functions through `#[differentiable]` (issue 8, defect 7):
//! a few hundred chained `let`s and twenty nested `for` loops expand (in
//! linear time, without overflowing the compiler's stack) and their
//! derivatives agree with finite differences and with each other.
#![allow(clippy::assign_op_pattern, clippy::let_and_return)]

mod common;
use common::*;
use linad::differentiable;

/// 300 chained `let`s, each reading the previous one (and the inputs).
#[differentiable]
fn chain(x: f64, y: f64) -> f64 {
    let v0 = x * y;
    let v1 = v0 - v0 * v0 * 0.05 + y * 0.01;
    let v2 = (v1 * 0.5).tanh() + v1 * 0.5;
    let v3 = v2 * 0.9 + (x + 0.03).sin() * 0.1;
    let v4 = v3 - v3 * v3 * 0.05 + y * 0.01;
    let v5 = (v4 * 0.5).tanh() + v4 * 0.5;
    let v6 = v5 * 0.9 + (x + 0.06).sin() * 0.1;
    let v7 = v6 - v6 * v6 * 0.05 + y * 0.01;
    let v8 = (v7 * 0.5).tanh() + v7 * 0.5;
    let v9 = v8 * 0.9 + (x + 0.09).sin() * 0.1;
    let v10 = v9 - v9 * v9 * 0.05 + y * 0.01;
    let v11 = (v10 * 0.5).tanh() + v10 * 0.5;
    let v12 = v11 * 0.9 + (x + 0.12).sin() * 0.1;
    let v13 = v12 - v12 * v12 * 0.05 + y * 0.01;
    let v14 = (v13 * 0.5).tanh() + v13 * 0.5;
    let v15 = v14 * 0.9 + (x + 0.15).sin() * 0.1;
    let v16 = v15 - v15 * v15 * 0.05 + y * 0.01;
    let v17 = (v16 * 0.5).tanh() + v16 * 0.5;
    let v18 = v17 * 0.9 + (x + 0.18).sin() * 0.1;
    let v19 = v18 - v18 * v18 * 0.05 + y * 0.01;
    let v20 = (v19 * 0.5).tanh() + v19 * 0.5;
    let v21 = v20 * 0.9 + (x + 0.21).sin() * 0.1;
    let v22 = v21 - v21 * v21 * 0.05 + y * 0.01;
    let v23 = (v22 * 0.5).tanh() + v22 * 0.5;
    let v24 = v23 * 0.9 + (x + 0.24).sin() * 0.1;
    let v25 = v24 - v24 * v24 * 0.05 + y * 0.01;
    let v26 = (v25 * 0.5).tanh() + v25 * 0.5;
    let v27 = v26 * 0.9 + (x + 0.27).sin() * 0.1;
    let v28 = v27 - v27 * v27 * 0.05 + y * 0.01;
    let v29 = (v28 * 0.5).tanh() + v28 * 0.5;
    let v30 = v29 * 0.9 + (x + 0.30).sin() * 0.1;
    let v31 = v30 - v30 * v30 * 0.05 + y * 0.01;
    let v32 = (v31 * 0.5).tanh() + v31 * 0.5;
    let v33 = v32 * 0.9 + (x + 0.33).sin() * 0.1;
    let v34 = v33 - v33 * v33 * 0.05 + y * 0.01;
    let v35 = (v34 * 0.5).tanh() + v34 * 0.5;
    let v36 = v35 * 0.9 + (x + 0.36).sin() * 0.1;
    let v37 = v36 - v36 * v36 * 0.05 + y * 0.01;
    let v38 = (v37 * 0.5).tanh() + v37 * 0.5;
    let v39 = v38 * 0.9 + (x + 0.39).sin() * 0.1;
    let v40 = v39 - v39 * v39 * 0.05 + y * 0.01;
    let v41 = (v40 * 0.5).tanh() + v40 * 0.5;
    let v42 = v41 * 0.9 + (x + 0.42).sin() * 0.1;
    let v43 = v42 - v42 * v42 * 0.05 + y * 0.01;
    let v44 = (v43 * 0.5).tanh() + v43 * 0.5;
    let v45 = v44 * 0.9 + (x + 0.45).sin() * 0.1;
    let v46 = v45 - v45 * v45 * 0.05 + y * 0.01;
    let v47 = (v46 * 0.5).tanh() + v46 * 0.5;
    let v48 = v47 * 0.9 + (x + 0.48).sin() * 0.1;
    let v49 = v48 - v48 * v48 * 0.05 + y * 0.01;
    let v50 = (v49 * 0.5).tanh() + v49 * 0.5;
    let v51 = v50 * 0.9 + (x + 0.51).sin() * 0.1;
    let v52 = v51 - v51 * v51 * 0.05 + y * 0.01;
    let v53 = (v52 * 0.5).tanh() + v52 * 0.5;
    let v54 = v53 * 0.9 + (x + 0.54).sin() * 0.1;
    let v55 = v54 - v54 * v54 * 0.05 + y * 0.01;
    let v56 = (v55 * 0.5).tanh() + v55 * 0.5;
    let v57 = v56 * 0.9 + (x + 0.57).sin() * 0.1;
    let v58 = v57 - v57 * v57 * 0.05 + y * 0.01;
    let v59 = (v58 * 0.5).tanh() + v58 * 0.5;
    let v60 = v59 * 0.9 + (x + 0.60).sin() * 0.1;
    let v61 = v60 - v60 * v60 * 0.05 + y * 0.01;
    let v62 = (v61 * 0.5).tanh() + v61 * 0.5;
    let v63 = v62 * 0.9 + (x + 0.63).sin() * 0.1;
    let v64 = v63 - v63 * v63 * 0.05 + y * 0.01;
    let v65 = (v64 * 0.5).tanh() + v64 * 0.5;
    let v66 = v65 * 0.9 + (x + 0.66).sin() * 0.1;
    let v67 = v66 - v66 * v66 * 0.05 + y * 0.01;
    let v68 = (v67 * 0.5).tanh() + v67 * 0.5;
    let v69 = v68 * 0.9 + (x + 0.69).sin() * 0.1;
    let v70 = v69 - v69 * v69 * 0.05 + y * 0.01;
    let v71 = (v70 * 0.5).tanh() + v70 * 0.5;
    let v72 = v71 * 0.9 + (x + 0.72).sin() * 0.1;
    let v73 = v72 - v72 * v72 * 0.05 + y * 0.01;
    let v74 = (v73 * 0.5).tanh() + v73 * 0.5;
    let v75 = v74 * 0.9 + (x + 0.75).sin() * 0.1;
    let v76 = v75 - v75 * v75 * 0.05 + y * 0.01;
    let v77 = (v76 * 0.5).tanh() + v76 * 0.5;
    let v78 = v77 * 0.9 + (x + 0.78).sin() * 0.1;
    let v79 = v78 - v78 * v78 * 0.05 + y * 0.01;
    let v80 = (v79 * 0.5).tanh() + v79 * 0.5;
    let v81 = v80 * 0.9 + (x + 0.81).sin() * 0.1;
    let v82 = v81 - v81 * v81 * 0.05 + y * 0.01;
    let v83 = (v82 * 0.5).tanh() + v82 * 0.5;
    let v84 = v83 * 0.9 + (x + 0.84).sin() * 0.1;
    let v85 = v84 - v84 * v84 * 0.05 + y * 0.01;
    let v86 = (v85 * 0.5).tanh() + v85 * 0.5;
    let v87 = v86 * 0.9 + (x + 0.87).sin() * 0.1;
    let v88 = v87 - v87 * v87 * 0.05 + y * 0.01;
    let v89 = (v88 * 0.5).tanh() + v88 * 0.5;
    let v90 = v89 * 0.9 + (x + 0.90).sin() * 0.1;
    let v91 = v90 - v90 * v90 * 0.05 + y * 0.01;
    let v92 = (v91 * 0.5).tanh() + v91 * 0.5;
    let v93 = v92 * 0.9 + (x + 0.93).sin() * 0.1;
    let v94 = v93 - v93 * v93 * 0.05 + y * 0.01;
    let v95 = (v94 * 0.5).tanh() + v94 * 0.5;
    let v96 = v95 * 0.9 + (x + 0.96).sin() * 0.1;
    let v97 = v96 - v96 * v96 * 0.05 + y * 0.01;
    let v98 = (v97 * 0.5).tanh() + v97 * 0.5;
    let v99 = v98 * 0.9 + (x + 0.99).sin() * 0.1;
    let v100 = v99 - v99 * v99 * 0.05 + y * 0.01;
    let v101 = (v100 * 0.5).tanh() + v100 * 0.5;
    let v102 = v101 * 0.9 + (x + 1.02).sin() * 0.1;
    let v103 = v102 - v102 * v102 * 0.05 + y * 0.01;
    let v104 = (v103 * 0.5).tanh() + v103 * 0.5;
    let v105 = v104 * 0.9 + (x + 1.05).sin() * 0.1;
    let v106 = v105 - v105 * v105 * 0.05 + y * 0.01;
    let v107 = (v106 * 0.5).tanh() + v106 * 0.5;
    let v108 = v107 * 0.9 + (x + 1.08).sin() * 0.1;
    let v109 = v108 - v108 * v108 * 0.05 + y * 0.01;
    let v110 = (v109 * 0.5).tanh() + v109 * 0.5;
    let v111 = v110 * 0.9 + (x + 1.11).sin() * 0.1;
    let v112 = v111 - v111 * v111 * 0.05 + y * 0.01;
    let v113 = (v112 * 0.5).tanh() + v112 * 0.5;
    let v114 = v113 * 0.9 + (x + 1.14).sin() * 0.1;
    let v115 = v114 - v114 * v114 * 0.05 + y * 0.01;
    let v116 = (v115 * 0.5).tanh() + v115 * 0.5;
    let v117 = v116 * 0.9 + (x + 1.17).sin() * 0.1;
    let v118 = v117 - v117 * v117 * 0.05 + y * 0.01;
    let v119 = (v118 * 0.5).tanh() + v118 * 0.5;
    let v120 = v119 * 0.9 + (x + 1.20).sin() * 0.1;
    let v121 = v120 - v120 * v120 * 0.05 + y * 0.01;
    let v122 = (v121 * 0.5).tanh() + v121 * 0.5;
    let v123 = v122 * 0.9 + (x + 1.23).sin() * 0.1;
    let v124 = v123 - v123 * v123 * 0.05 + y * 0.01;
    let v125 = (v124 * 0.5).tanh() + v124 * 0.5;
    let v126 = v125 * 0.9 + (x + 1.26).sin() * 0.1;
    let v127 = v126 - v126 * v126 * 0.05 + y * 0.01;
    let v128 = (v127 * 0.5).tanh() + v127 * 0.5;
    let v129 = v128 * 0.9 + (x + 1.29).sin() * 0.1;
    let v130 = v129 - v129 * v129 * 0.05 + y * 0.01;
    let v131 = (v130 * 0.5).tanh() + v130 * 0.5;
    let v132 = v131 * 0.9 + (x + 1.32).sin() * 0.1;
    let v133 = v132 - v132 * v132 * 0.05 + y * 0.01;
    let v134 = (v133 * 0.5).tanh() + v133 * 0.5;
    let v135 = v134 * 0.9 + (x + 1.35).sin() * 0.1;
    let v136 = v135 - v135 * v135 * 0.05 + y * 0.01;
    let v137 = (v136 * 0.5).tanh() + v136 * 0.5;
    let v138 = v137 * 0.9 + (x + 1.38).sin() * 0.1;
    let v139 = v138 - v138 * v138 * 0.05 + y * 0.01;
    let v140 = (v139 * 0.5).tanh() + v139 * 0.5;
    let v141 = v140 * 0.9 + (x + 1.41).sin() * 0.1;
    let v142 = v141 - v141 * v141 * 0.05 + y * 0.01;
    let v143 = (v142 * 0.5).tanh() + v142 * 0.5;
    let v144 = v143 * 0.9 + (x + 1.44).sin() * 0.1;
    let v145 = v144 - v144 * v144 * 0.05 + y * 0.01;
    let v146 = (v145 * 0.5).tanh() + v145 * 0.5;
    let v147 = v146 * 0.9 + (x + 1.47).sin() * 0.1;
    let v148 = v147 - v147 * v147 * 0.05 + y * 0.01;
    let v149 = (v148 * 0.5).tanh() + v148 * 0.5;
    let v150 = v149 * 0.9 + (x + 1.50).sin() * 0.1;
    let v151 = v150 - v150 * v150 * 0.05 + y * 0.01;
    let v152 = (v151 * 0.5).tanh() + v151 * 0.5;
    let v153 = v152 * 0.9 + (x + 1.53).sin() * 0.1;
    let v154 = v153 - v153 * v153 * 0.05 + y * 0.01;
    let v155 = (v154 * 0.5).tanh() + v154 * 0.5;
    let v156 = v155 * 0.9 + (x + 1.56).sin() * 0.1;
    let v157 = v156 - v156 * v156 * 0.05 + y * 0.01;
    let v158 = (v157 * 0.5).tanh() + v157 * 0.5;
    let v159 = v158 * 0.9 + (x + 1.59).sin() * 0.1;
    let v160 = v159 - v159 * v159 * 0.05 + y * 0.01;
    let v161 = (v160 * 0.5).tanh() + v160 * 0.5;
    let v162 = v161 * 0.9 + (x + 1.62).sin() * 0.1;
    let v163 = v162 - v162 * v162 * 0.05 + y * 0.01;
    let v164 = (v163 * 0.5).tanh() + v163 * 0.5;
    let v165 = v164 * 0.9 + (x + 1.65).sin() * 0.1;
    let v166 = v165 - v165 * v165 * 0.05 + y * 0.01;
    let v167 = (v166 * 0.5).tanh() + v166 * 0.5;
    let v168 = v167 * 0.9 + (x + 1.68).sin() * 0.1;
    let v169 = v168 - v168 * v168 * 0.05 + y * 0.01;
    let v170 = (v169 * 0.5).tanh() + v169 * 0.5;
    let v171 = v170 * 0.9 + (x + 1.71).sin() * 0.1;
    let v172 = v171 - v171 * v171 * 0.05 + y * 0.01;
    let v173 = (v172 * 0.5).tanh() + v172 * 0.5;
    let v174 = v173 * 0.9 + (x + 1.74).sin() * 0.1;
    let v175 = v174 - v174 * v174 * 0.05 + y * 0.01;
    let v176 = (v175 * 0.5).tanh() + v175 * 0.5;
    let v177 = v176 * 0.9 + (x + 1.77).sin() * 0.1;
    let v178 = v177 - v177 * v177 * 0.05 + y * 0.01;
    let v179 = (v178 * 0.5).tanh() + v178 * 0.5;
    let v180 = v179 * 0.9 + (x + 1.80).sin() * 0.1;
    let v181 = v180 - v180 * v180 * 0.05 + y * 0.01;
    let v182 = (v181 * 0.5).tanh() + v181 * 0.5;
    let v183 = v182 * 0.9 + (x + 1.83).sin() * 0.1;
    let v184 = v183 - v183 * v183 * 0.05 + y * 0.01;
    let v185 = (v184 * 0.5).tanh() + v184 * 0.5;
    let v186 = v185 * 0.9 + (x + 1.86).sin() * 0.1;
    let v187 = v186 - v186 * v186 * 0.05 + y * 0.01;
    let v188 = (v187 * 0.5).tanh() + v187 * 0.5;
    let v189 = v188 * 0.9 + (x + 1.89).sin() * 0.1;
    let v190 = v189 - v189 * v189 * 0.05 + y * 0.01;
    let v191 = (v190 * 0.5).tanh() + v190 * 0.5;
    let v192 = v191 * 0.9 + (x + 1.92).sin() * 0.1;
    let v193 = v192 - v192 * v192 * 0.05 + y * 0.01;
    let v194 = (v193 * 0.5).tanh() + v193 * 0.5;
    let v195 = v194 * 0.9 + (x + 1.95).sin() * 0.1;
    let v196 = v195 - v195 * v195 * 0.05 + y * 0.01;
    let v197 = (v196 * 0.5).tanh() + v196 * 0.5;
    let v198 = v197 * 0.9 + (x + 1.98).sin() * 0.1;
    let v199 = v198 - v198 * v198 * 0.05 + y * 0.01;
    let v200 = (v199 * 0.5).tanh() + v199 * 0.5;
    let v201 = v200 * 0.9 + (x + 2.01).sin() * 0.1;
    let v202 = v201 - v201 * v201 * 0.05 + y * 0.01;
    let v203 = (v202 * 0.5).tanh() + v202 * 0.5;
    let v204 = v203 * 0.9 + (x + 2.04).sin() * 0.1;
    let v205 = v204 - v204 * v204 * 0.05 + y * 0.01;
    let v206 = (v205 * 0.5).tanh() + v205 * 0.5;
    let v207 = v206 * 0.9 + (x + 2.07).sin() * 0.1;
    let v208 = v207 - v207 * v207 * 0.05 + y * 0.01;
    let v209 = (v208 * 0.5).tanh() + v208 * 0.5;
    let v210 = v209 * 0.9 + (x + 2.10).sin() * 0.1;
    let v211 = v210 - v210 * v210 * 0.05 + y * 0.01;
    let v212 = (v211 * 0.5).tanh() + v211 * 0.5;
    let v213 = v212 * 0.9 + (x + 2.13).sin() * 0.1;
    let v214 = v213 - v213 * v213 * 0.05 + y * 0.01;
    let v215 = (v214 * 0.5).tanh() + v214 * 0.5;
    let v216 = v215 * 0.9 + (x + 2.16).sin() * 0.1;
    let v217 = v216 - v216 * v216 * 0.05 + y * 0.01;
    let v218 = (v217 * 0.5).tanh() + v217 * 0.5;
    let v219 = v218 * 0.9 + (x + 2.19).sin() * 0.1;
    let v220 = v219 - v219 * v219 * 0.05 + y * 0.01;
    let v221 = (v220 * 0.5).tanh() + v220 * 0.5;
    let v222 = v221 * 0.9 + (x + 2.22).sin() * 0.1;
    let v223 = v222 - v222 * v222 * 0.05 + y * 0.01;
    let v224 = (v223 * 0.5).tanh() + v223 * 0.5;
    let v225 = v224 * 0.9 + (x + 2.25).sin() * 0.1;
    let v226 = v225 - v225 * v225 * 0.05 + y * 0.01;
    let v227 = (v226 * 0.5).tanh() + v226 * 0.5;
    let v228 = v227 * 0.9 + (x + 2.28).sin() * 0.1;
    let v229 = v228 - v228 * v228 * 0.05 + y * 0.01;
    let v230 = (v229 * 0.5).tanh() + v229 * 0.5;
    let v231 = v230 * 0.9 + (x + 2.31).sin() * 0.1;
    let v232 = v231 - v231 * v231 * 0.05 + y * 0.01;
    let v233 = (v232 * 0.5).tanh() + v232 * 0.5;
    let v234 = v233 * 0.9 + (x + 2.34).sin() * 0.1;
    let v235 = v234 - v234 * v234 * 0.05 + y * 0.01;
    let v236 = (v235 * 0.5).tanh() + v235 * 0.5;
    let v237 = v236 * 0.9 + (x + 2.37).sin() * 0.1;
    let v238 = v237 - v237 * v237 * 0.05 + y * 0.01;
    let v239 = (v238 * 0.5).tanh() + v238 * 0.5;
    let v240 = v239 * 0.9 + (x + 2.40).sin() * 0.1;
    let v241 = v240 - v240 * v240 * 0.05 + y * 0.01;
    let v242 = (v241 * 0.5).tanh() + v241 * 0.5;
    let v243 = v242 * 0.9 + (x + 2.43).sin() * 0.1;
    let v244 = v243 - v243 * v243 * 0.05 + y * 0.01;
    let v245 = (v244 * 0.5).tanh() + v244 * 0.5;
    let v246 = v245 * 0.9 + (x + 2.46).sin() * 0.1;
    let v247 = v246 - v246 * v246 * 0.05 + y * 0.01;
    let v248 = (v247 * 0.5).tanh() + v247 * 0.5;
    let v249 = v248 * 0.9 + (x + 2.49).sin() * 0.1;
    let v250 = v249 - v249 * v249 * 0.05 + y * 0.01;
    let v251 = (v250 * 0.5).tanh() + v250 * 0.5;
    let v252 = v251 * 0.9 + (x + 2.52).sin() * 0.1;
    let v253 = v252 - v252 * v252 * 0.05 + y * 0.01;
    let v254 = (v253 * 0.5).tanh() + v253 * 0.5;
    let v255 = v254 * 0.9 + (x + 2.55).sin() * 0.1;
    let v256 = v255 - v255 * v255 * 0.05 + y * 0.01;
    let v257 = (v256 * 0.5).tanh() + v256 * 0.5;
    let v258 = v257 * 0.9 + (x + 2.58).sin() * 0.1;
    let v259 = v258 - v258 * v258 * 0.05 + y * 0.01;
    let v260 = (v259 * 0.5).tanh() + v259 * 0.5;
    let v261 = v260 * 0.9 + (x + 2.61).sin() * 0.1;
    let v262 = v261 - v261 * v261 * 0.05 + y * 0.01;
    let v263 = (v262 * 0.5).tanh() + v262 * 0.5;
    let v264 = v263 * 0.9 + (x + 2.64).sin() * 0.1;
    let v265 = v264 - v264 * v264 * 0.05 + y * 0.01;
    let v266 = (v265 * 0.5).tanh() + v265 * 0.5;
    let v267 = v266 * 0.9 + (x + 2.67).sin() * 0.1;
    let v268 = v267 - v267 * v267 * 0.05 + y * 0.01;
    let v269 = (v268 * 0.5).tanh() + v268 * 0.5;
    let v270 = v269 * 0.9 + (x + 2.70).sin() * 0.1;
    let v271 = v270 - v270 * v270 * 0.05 + y * 0.01;
    let v272 = (v271 * 0.5).tanh() + v271 * 0.5;
    let v273 = v272 * 0.9 + (x + 2.73).sin() * 0.1;
    let v274 = v273 - v273 * v273 * 0.05 + y * 0.01;
    let v275 = (v274 * 0.5).tanh() + v274 * 0.5;
    let v276 = v275 * 0.9 + (x + 2.76).sin() * 0.1;
    let v277 = v276 - v276 * v276 * 0.05 + y * 0.01;
    let v278 = (v277 * 0.5).tanh() + v277 * 0.5;
    let v279 = v278 * 0.9 + (x + 2.79).sin() * 0.1;
    let v280 = v279 - v279 * v279 * 0.05 + y * 0.01;
    let v281 = (v280 * 0.5).tanh() + v280 * 0.5;
    let v282 = v281 * 0.9 + (x + 2.82).sin() * 0.1;
    let v283 = v282 - v282 * v282 * 0.05 + y * 0.01;
    let v284 = (v283 * 0.5).tanh() + v283 * 0.5;
    let v285 = v284 * 0.9 + (x + 2.85).sin() * 0.1;
    let v286 = v285 - v285 * v285 * 0.05 + y * 0.01;
    let v287 = (v286 * 0.5).tanh() + v286 * 0.5;
    let v288 = v287 * 0.9 + (x + 2.88).sin() * 0.1;
    let v289 = v288 - v288 * v288 * 0.05 + y * 0.01;
    let v290 = (v289 * 0.5).tanh() + v289 * 0.5;
    let v291 = v290 * 0.9 + (x + 2.91).sin() * 0.1;
    let v292 = v291 - v291 * v291 * 0.05 + y * 0.01;
    let v293 = (v292 * 0.5).tanh() + v292 * 0.5;
    let v294 = v293 * 0.9 + (x + 2.94).sin() * 0.1;
    let v295 = v294 - v294 * v294 * 0.05 + y * 0.01;
    let v296 = (v295 * 0.5).tanh() + v295 * 0.5;
    let v297 = v296 * 0.9 + (x + 2.97).sin() * 0.1;
    let v298 = v297 - v297 * v297 * 0.05 + y * 0.01;
    let v299 = (v298 * 0.5).tanh() + v298 * 0.5;
    let v300 = v299 * 0.9 + (x + 3.00).sin() * 0.1;
    v300
}

#[test]
fn three_hundred_lets() {
    for p in [(0.3, 0.7), (-1.1, 0.4)] {
        check_derivatives(
            &p,
            |(x, y)| chain(*x, *y),
            |(x, y), (dx, dy)| chain_jvp(*x, *y, *dx, *dy),
            |(x, y), ct| chain_vjp(*x, *y, *ct),
        );
    }
}

/// Twenty nested `for` loops; three of them run `m` times, the others once,
/// and two state variables are updated at several depths.
#[differentiable]
fn nest(x: f64, y: f64, m: usize) -> f64 {
    let mut s = x;
    let mut t = y;
    for _ in 0..m {
        for _ in 0..1 {
            for _ in 0..1 {
                for _ in 0..1 {
                    for _ in 0..1 {
                        t = t * 0.9 + s * 0.1;
                        for _ in 0..1 {
                            for _ in 0..1 {
                                for _ in 0..1 {
                                    for _ in 0..1 {
                                        for _ in 0..m {
                                            t = t * 0.9 + s * 0.1;
                                            for _ in 0..1 {
                                                for _ in 0..1 {
                                                    for _ in 0..1 {
                                                        for _ in 0..1 {
                                                            for _ in 0..1 {
                                                                t = t * 0.9 + s * 0.1;
                                                                for _ in 0..1 {
                                                                    for _ in 0..1 {
                                                                        for _ in 0..1 {
                                                                            for _ in 0..1 {
                                                                                for _ in 0..m {
                                                                                    t = t * 0.9
                                                                                        + s * 0.1;
                                                                                    s = (s * t)
                                                                                        .sin()
                                                                                        + x * 0.5;
                                                                                }
                                                                            }
                                                                            s = s * 0.8 + t * 0.2;
                                                                        }
                                                                    }
                                                                }
                                                            }
                                                        }
                                                    }
                                                }
                                                s = s * 0.8 + t * 0.2;
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    s = s * 0.8 + t * 0.2;
                }
            }
        }
    }
    s + t
}

#[test]
fn twenty_nested_loops() {
    for m in [0, 1, 2] {
        check_derivatives(
            &(0.4, 0.9),
            |(x, y)| nest(*x, *y, m),
            |(x, y), (dx, dy)| nest_jvp(*x, *y, m, *dx, *dy),
            |(x, y), ct| nest_vjp(*x, *y, m, *ct),
        );
    }
}
