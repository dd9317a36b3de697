import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { errorCodeOf, errorCodeOfGrpcStatus, errorCodeOfHttpStatus, grpcStatus, MeshError, type ErrorCode } from './errors.js';

test('errorCodeOf: a MeshError its own code, anything else INTERNAL', () => {
  assert.equal(errorCodeOf(new MeshError('NOT_FOUND', 'x')), 'NOT_FOUND');
  assert.equal(errorCodeOf(new Error('x')), 'INTERNAL');
  assert.equal(errorCodeOf('x'), 'INTERNAL');
});

test('grpcStatus: the gRPC status of the same name', () => {
  const codes: ErrorCode[] = [
    'INVALID_ARGUMENT',
    'NOT_FOUND',
    'ALREADY_EXISTS',
    'FAILED_PRECONDITION',
    'ABORTED',
    'UNAUTHENTICATED',
    'PERMISSION_DENIED',
    'RESOURCE_EXHAUSTED',
    'DEADLINE_EXCEEDED',
    'UNAVAILABLE',
    'INTERNAL',
  ];
  for (const c of codes) assert.equal(grpcStatus(c), grpc.status[c], c);
});

test("errorCodeOfGrpcStatus: the caller's mistakes keep their code, the rest is UNAVAILABLE", () => {
  assert.equal(errorCodeOfGrpcStatus(grpc.status.UNAUTHENTICATED), 'UNAUTHENTICATED');
  assert.equal(errorCodeOfGrpcStatus(grpc.status.PERMISSION_DENIED), 'PERMISSION_DENIED');
  assert.equal(errorCodeOfGrpcStatus(grpc.status.INVALID_ARGUMENT), 'INVALID_ARGUMENT');
  assert.equal(errorCodeOfGrpcStatus(grpc.status.RESOURCE_EXHAUSTED), 'RESOURCE_EXHAUSTED');
  assert.equal(errorCodeOfGrpcStatus(grpc.status.INTERNAL), 'UNAVAILABLE');
  assert.equal(errorCodeOfGrpcStatus(undefined), 'UNAVAILABLE');
});

test('errorCodeOfHttpStatus', () => {
  const cases: [number, ErrorCode][] = [
    [400, 'INVALID_ARGUMENT'],
    [401, 'UNAUTHENTICATED'],
    [403, 'PERMISSION_DENIED'],
    [404, 'NOT_FOUND'],
    [405, 'FAILED_PRECONDITION'],
    [409, 'ABORTED'],
    [413, 'RESOURCE_EXHAUSTED'],
    [422, 'INVALID_ARGUMENT'],
    [429, 'RESOURCE_EXHAUSTED'],
    [500, 'INTERNAL'],
    [503, 'UNAVAILABLE'],
    [504, 'DEADLINE_EXCEEDED'],
  ];
  for (const [status, code] of cases) assert.equal(errorCodeOfHttpStatus(status), code, String(status));
});
