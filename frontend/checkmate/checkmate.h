/* frontend/checkmate/checkmate.h -- importers of published benchmark graphs
 * straight to the plain DAG (Checkmate / Moccasin node-link JSON,
 * checkmate.c). DAG only: nothing here knows .net.
 */
#ifndef REMAT_CHECKMATE_H
#define REMAT_CHECKMATE_H

#include "dag.h"

/* ---------------------------------------------------------------- frontend/checkmate/checkmate.c */
/* Reads a Checkmate/Moccasin node-link JSON graph. Returns 0, or -1 with a
 * message in err. */
int cm_import(const char *path, Dag *d, Arena *a, char *err, size_t errn);

/* What the importer knows beyond the Dag, for the report. */
typedef struct CmInfo {
	const char *name;       /* graph.name, else the file name */
	int nedges;
} CmInfo;
/* cm_import that also fills *info. */
int cm_import_info(const char *path, Dag *d, Arena *a, char *err, size_t errn,
                   CmInfo *info);

#endif
