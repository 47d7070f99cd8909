/*
 * psh_internal.cuh - host-side launch set-up that the CUDA PSH launchers share (psh.cu: v1-v3,
 * psh_v4.cu: v4); private to kernels/. Each launcher passes its kernels one parameter struct by value
 * (Prm, P4); the two differ in scratch and tiling fields, so this fills only the fields they have in
 * common, by name, and leaves the layout of each struct (what the kernels read) untouched.
 * psh_call_check is the checks of a call they all make first (their scratch protocol, psh_scratch_check, is in
 * psh_internal.h, where the host-only psh_run_paired in psh.c uses it too).
 * Invariant: after psh_kparams_fill, every shared input/parameter/output field equals the matching
 * field of in, prm and out, and probe[] holds the probe order of (prm->nprobe, prm->seed).
 */
#ifndef F3D_PSH_INTERNAL_CUH
#define F3D_PSH_INTERNAL_CUH

#include "kernels/kernels.h"

/* P: a kernel parameter struct with the fields xyz, nclouds, n, nb, cap, nprobe, hash, voxel, seed,
 * probe, bucket, offset, start, slot, perm, counters_out and xyz_out. The cloud offsets and the bucket
 * count output are named differently per launcher, so the caller sets them. */
template <class P>
static inline void psh_kparams_fill(P *p, const psh_out *out, const psh_in *in, const psh_params *prm) {
  p->xyz = in->xyz;
  p->nclouds = in->nclouds;
  p->n = in->n;
  p->nb = prm->nb;
  p->cap = prm->cap;
  p->nprobe = prm->nprobe;
  p->hash = (uint32_t)prm->hash;
  p->voxel = prm->voxel;
  p->seed = prm->seed;
  psh_probe_order(p->probe, prm->nprobe, prm->seed);
  p->bucket = out->bucket;
  p->offset = out->offset;
  p->start = out->bucket_start;
  p->slot = out->slot;
  p->perm = out->perm;
  p->counters_out = out->counters;
  p->xyz_out = out->xyz;
}

/* What every GPU launcher checks of a call before it sizes anything: the parameters against the batch, and
 * the point count against the bound of one call (the cloud offsets stay on the device, so psh_params_check
 * cannot see n). */
static inline hx_status psh_call_check(const psh_params *prm, const psh_in *in, hx_err *err) {
  HX_TRY(psh_params_check(prm, NULL, in->nclouds, err));
  if (in->n > PSH_MAX_POINTS) return hx_errf(err, HX_EINVAL, "psh: %u points exceed the limit", in->n);
  return HX_OK;
}

#endif /* F3D_PSH_INTERNAL_CUH */
