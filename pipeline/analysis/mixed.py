"""statsmodels' linear mixed model, with each covariance's per-group solves done once.

``stats.variance_components`` fits a random intercept per run (no variance components, no
penalties) and refits it hundreds of times in its parametric bootstrap. statsmodels' optimiser
asks, at every point, for the profile likelihood and its score, and each of those (and the GLS
fixed effects under both) rebuilds every group's Sherman-Morrison-Woodbury solver and log
determinant for the same covariance. ``MixedLM`` here keeps them for the last covariances seen,
and the GLS fixed effects for the last one. Everything else is statsmodels' own code path, and
the arithmetic is statsmodels' (statsmodels 0.14-0.15, ``mixed_linear_model``): the same NumPy
calls on the same arrays in the same order, so every fit is the same, bit for bit
(tests/unit/test_variance_speed.py holds it to a plain statsmodels fit). Models outside that
case (variance components, penalties, sparse designs) take statsmodels' methods unchanged.
"""

from __future__ import annotations

import numpy as np
from statsmodels.regression import mixed_linear_model as _sm

_KEEP = 4  # covariances whose solvers are kept (the optimiser's point, the pseudo-inverse's)


class MixedLM(_sm.MixedLM):
    """``statsmodels.regression.mixed_linear_model.MixedLM``, with solves shared per point."""

    def _simple(self) -> bool:
        return (self.k_vc == 0 and getattr(self, "cov_pen", None) is None
                and getattr(self, "fe_pen", None) is None
                and getattr(self, "_freepat", None) is None and hasattr(self, "reml")
                and not _sm.sparse.issparse(self.exog_re))  # fmt: skip

    def _group_solvers(self, cov_re_inv: np.ndarray) -> list[tuple]:
        """Per group: (solver, log det of the SMW inner matrix), as ``_smw_solver`` and
        ``_smw_logdet`` compute them with s = 1 and no variance components."""
        key = cov_re_inv.tobytes()
        cache = self.__dict__.setdefault("_solver_cache", {})
        if key in cache:
            return cache[key]
        out = []
        di = np.empty(0)
        for group_ix in range(len(self.group_labels)):
            ex_r, ex2_r = self._aex_r[group_ix], self._aex_r2[group_ix]
            # _smw_solver(1.0, ex_r, ex2_r, cov_re_inv, di)
            qmat = ex2_r / 1.0
            m = cov_re_inv.shape[0]
            qmat[0:m, 0:m] += cov_re_inv
            d = qmat.shape[0]
            qmat.flat[m * (d + 1) :: d + 1] += di
            qmati = np.linalg.solve(qmat, ex_r.T)
            # _smw_logdet builds the same matrix
            _, ld1 = np.linalg.slogdet(qmat)
            out.append((_solver(ex_r, qmati), ld1))
        if len(cache) >= _KEEP:
            cache.pop(next(iter(cache)))
        cache[key] = out
        return out

    def get_fe_params(self, cov_re, vcomp, tol=1e-10):
        if not self._simple() or self.k_fe == 0 or self.k_re == 0 or len(vcomp):
            return super().get_fe_params(cov_re, vcomp, tol)
        key = (cov_re.tobytes(), tol)
        if self.__dict__.get("_fe_key") != key:
            self._fe_value = self._get_fe_params(cov_re, tol)
            self._fe_key = key
        fe_params, sing = self._fe_value
        return fe_params.copy(), sing

    def _get_fe_params(self, cov_re, tol):
        sing = False
        w, v = np.linalg.eigh(cov_re)
        if w.min() < tol:
            sing = True
            ii = np.flatnonzero(w >= tol)
            if len(ii) == 0:
                cov_re_inv = np.zeros_like(cov_re)
            else:
                vi = v[:, ii]
                wi = w[ii]
                cov_re_inv = np.dot(vi / wi, vi.T)
        else:
            cov_re_inv = np.linalg.inv(cov_re)

        if not hasattr(self, "_endex_li"):
            self._endex_li = []
            for group_ix, _ in enumerate(self.group_labels):
                mat = np.concatenate(
                    (self.exog_li[group_ix], self.endog_li[group_ix][:, None]), axis=1
                )
                self._endex_li.append(mat)

        solvers = self._group_solvers(cov_re_inv)
        xtxy = 0.0
        for group_ix, _group in enumerate(self.group_labels):
            exog = self.exog_li[group_ix]
            u = solvers[group_ix][0](self._endex_li[group_ix])
            xtxy += np.dot(exog.T, u)

        if sing:
            fe_params = np.dot(np.linalg.pinv(xtxy[:, 0:-1]), xtxy[:, -1])
        else:
            fe_params = np.linalg.solve(xtxy[:, 0:-1], xtxy[:, -1])
        return fe_params, sing

    def loglike(self, params, profile_fe=True):
        if not self._simple() or self.k_re == 0 or not profile_fe:
            return super().loglike(params, profile_fe)
        if type(params) is not _sm.MixedLMParams:
            params = _sm.MixedLMParams.from_packed(
                params, self.k_fe, self.k_re, self.use_sqrt, has_fe=False
            )
        cov_re = params.cov_re
        vcomp = params.vcomp
        if len(vcomp):
            return super().loglike(params, profile_fe)

        fe_params, sing = self.get_fe_params(cov_re, vcomp)
        if sing:
            self._cov_sing += 1

        try:
            cov_re_inv = np.linalg.inv(cov_re)
        except np.linalg.LinAlgError:
            cov_re_inv = np.linalg.pinv(cov_re)
            self._cov_sing += 1
        _, cov_re_logdet = np.linalg.slogdet(cov_re)

        expval = np.dot(self.exog, fe_params)
        resid_all = self.endog - expval

        likeval = 0.0
        solvers = self._group_solvers(cov_re_inv)
        vc_var = np.empty(0)
        xvx, qf = 0.0, 0.0
        for group_ix, group in enumerate(self.group_labels):
            cov_aug_logdet = cov_re_logdet + np.sum(np.log(vc_var))
            exog = self.exog_li[group_ix]
            solver, ld1 = solvers[group_ix]
            resid = resid_all[self.row_indices[group]]

            # _smw_logdet(1.0, ...): B_logdet + p * log(1) + ld1
            p = self._aex_r[group_ix].shape[0]
            ld = cov_aug_logdet + p * np.log(1.0) + ld1
            likeval -= ld / 2.0

            u = solver(resid)
            qf += np.dot(resid, u)

            if self.reml:
                mat = solver(exog)
                xvx += np.dot(exog.T, mat)

        if self.reml:
            likeval -= (self.n_totobs - self.k_fe) * np.log(qf) / 2.0
            _, ld = np.linalg.slogdet(xvx)
            likeval -= ld / 2.0
            likeval -= (self.n_totobs - self.k_fe) * np.log(2 * np.pi) / 2.0
            likeval += (self.n_totobs - self.k_fe) * np.log(self.n_totobs - self.k_fe) / 2.0
            likeval -= (self.n_totobs - self.k_fe) / 2.0
        else:
            likeval -= self.n_totobs * np.log(qf) / 2.0
            likeval -= self.n_totobs * np.log(2 * np.pi) / 2.0
            likeval += self.n_totobs * np.log(self.n_totobs) / 2.0
            likeval -= self.n_totobs / 2.0

        return likeval

    def score_full(self, params, calc_fe):
        if not self._simple() or len(params.vcomp) or self.k_re == 0:
            return super().score_full(params, calc_fe)
        fe_params = params.fe_params
        cov_re = params.cov_re

        try:
            cov_re_inv = np.linalg.inv(cov_re)
        except np.linalg.LinAlgError:
            cov_re_inv = np.linalg.pinv(cov_re)
            self._cov_sing += 1

        score_fe = np.zeros(self.k_fe)
        score_re = np.zeros(self.k_re2)
        score_vc = np.zeros(self.k_vc)

        rvir = 0.0
        xtvir = 0.0
        xtvix = 0.0
        xtax = [0.0] * (self.k_re2 + self.k_vc)
        dlv = np.zeros(self.k_re2 + self.k_vc)
        rvavr = np.zeros(self.k_re2 + self.k_vc)

        solvers = self._group_solvers(cov_re_inv)
        for group_ix, _group in enumerate(self.group_labels):
            exog = self.exog_li[group_ix]
            ex_r = self._aex_r[group_ix]
            solver = solvers[group_ix][0]

            resid = self.endog_li[group_ix]
            if self.k_fe > 0:
                expval = np.dot(exog, fe_params)
                resid = resid - expval

            if self.reml:
                viexog = solver(exog)
                xtvix += np.dot(exog.T, viexog)

            vir = solver(resid)
            axr = solver(ex_r)  # _gen_dV_dPar, random effects only
            jj = 0
            for j1 in range(self.k_re):
                for j2 in range(j1 + 1):
                    matl, matr = ex_r[:, j1 : j1 + 1], ex_r[:, j2 : j2 + 1]
                    vsl, vsr = axr[:, j1 : j1 + 1], axr[:, j2 : j2 + 1]
                    sym = j1 == j2
                    dlv[jj] = _dotsum(matr, vsl)
                    if not sym:
                        dlv[jj] += _dotsum(matl, vsr)

                    ul = np.dot(vir, matl)
                    ur = ul.T if sym else np.dot(matr.T, vir)
                    ulr = np.dot(ul, ur)
                    rvavr[jj] += ulr
                    if not sym:
                        rvavr[jj] += ulr.T

                    if self.reml:
                        ul = np.dot(viexog.T, matl)
                        ur = ul.T if sym else np.dot(matr.T, viexog)
                        ulr = np.dot(ul, ur)
                        xtax[jj] += ulr
                        if not sym:
                            xtax[jj] += ulr.T
                    jj += 1

            score_re -= 0.5 * dlv[0 : self.k_re2]

            rvir += np.dot(resid, vir)

            if calc_fe:
                xtvir += np.dot(exog.T, vir)

        fac = self.n_totobs
        if self.reml:
            fac -= self.k_fe

        if calc_fe and self.k_fe > 0:
            score_fe += fac * xtvir / rvir

        score_re += 0.5 * fac * rvavr[0 : self.k_re2] / rvir

        if self.reml:
            xtvixi = np.linalg.inv(xtvix)
            for j in range(self.k_re2):
                score_re[j] += 0.5 * _dotsum(xtvixi.T, xtax[j])

        return score_fe, score_re, score_vc


def _solver(ex_r: np.ndarray, qmati: np.ndarray):
    """``_smw_solver``'s dense solver with s = 1."""
    s = 1.0

    def solver(rhs):
        ql = np.dot(qmati, rhs)
        ql = np.dot(ex_r, ql)
        return rhs / s - ql / s**2

    return solver


def _dotsum(x, y):
    return np.dot(x.ravel(), y.ravel())
