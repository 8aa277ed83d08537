import { createRegistry, type Registry } from '@bufbuild/protobuf';
import { file_svc_api_json } from './gen/svc/api/json_pb';
import { file_svc_api_apidiscovery_v2_generated } from './gen/svc/api/apidiscovery/v2/generated_pb';
import { file_svc_api_authentication_v1_generated } from './gen/svc/api/authentication/v1/generated_pb';
import { file_svc_api_authentication_v1beta1_generated } from './gen/svc/api/authentication/v1beta1/generated_pb';
import { file_svc_api_authorization_v1_generated } from './gen/svc/api/authorization/v1/generated_pb';
import { file_svc_api_rbac_v1_generated } from './gen/svc/api/rbac/v1/generated_pb';
import { file_svc_api_admissionregistration_v1_generated } from './gen/svc/api/admissionregistration/v1/generated_pb';
import { file_svc_api_coordination_v1_generated } from './gen/svc/api/coordination/v1/generated_pb';
import { file_svc_api_core_v1_generated } from './gen/svc/api/core/v1/generated_pb';
import { file_svc_api_events_v1_generated } from './gen/svc/api/events/v1/generated_pb';
import { file_svc_api_flowcontrol_v1_generated } from './gen/svc/api/flowcontrol/v1/generated_pb';
import { file_svc_api_meta_v1_generated } from './gen/svc/api/meta/v1/generated_pb';
import { file_svc_api_policy_v1_generated } from './gen/svc/api/policy/v1/generated_pb';
import { file_svc_api_runtime_generated } from './gen/svc/api/runtime/generated_pb';

/** Every message of the API's protobuf schemas (proto/svc/api), by full name. */
export const API_REGISTRY: Registry = createRegistry(
  file_svc_api_json,
  file_svc_api_meta_v1_generated,
  file_svc_api_runtime_generated,
  file_svc_api_core_v1_generated,
  file_svc_api_coordination_v1_generated,
  file_svc_api_policy_v1_generated,
  file_svc_api_events_v1_generated,
  file_svc_api_flowcontrol_v1_generated,
  file_svc_api_authentication_v1_generated,
  file_svc_api_authentication_v1beta1_generated,
  file_svc_api_rbac_v1_generated,
  file_svc_api_authorization_v1_generated,
  file_svc_api_admissionregistration_v1_generated,
  file_svc_api_apidiscovery_v2_generated,
);
